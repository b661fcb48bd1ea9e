/* SPDX-License-Identifier: MIT */
/*
 * libalign — octant's single model of block-device topology and sector
 * alignment.  One header, one prefix (align_), 0 / -errno returns.
 *
 * Units: LBAs are in logical sectors of the topology; byte quantities are
 * bytes; "sectors" of device-mapper tables are always 512 bytes.
 *
 * Debugging: LIBALIGN_DEBUG=0xffff (or "all") prints what the probe saw on
 * stderr; bits are ALIGN_DEBUG_*.
 */
#ifndef OCTANT_ALIGN_H
#define OCTANT_ALIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALIGN_DEBUG_PROBE   0x1   /* device / image / sysfs probing */
#define ALIGN_DEBUG_PROFILE 0x2   /* profile resolution */
#define ALIGN_DEBUG_CALC    0x4   /* calculators */

/* Where a topology came from. */
enum align_source {
	ALIGN_SRC_NONE = 0,   /* not filled yet */
	ALIGN_SRC_DEVICE,     /* block device: libblkid + sysfs */
	ALIGN_SRC_IMAGE,      /* octant flash image header */
	ALIGN_SRC_OVERRIDE,   /* explicit LOG/PHYS[/OFFSET] */
	ALIGN_SRC_PROFILE,    /* defaults of a named profile */
	ALIGN_SRC_SERVED,     /* block device served by ublk-flash: the
	                         image's geometry (run registry) */
};

/* A block device's topology, in the kernel's terms (queue limits). */
struct align_topology {
	uint32_t logical;          /* logical sector size, bytes (512, 4096) */
	uint32_t physical;         /* physical sector size, bytes */
	uint32_t alignment_offset; /* bytes, kernel semantics: LBA 0 sits this
	                              many bytes past a natural boundary's
	                              complement, i.e. the lowest aligned LBA is
	                              alignment_offset / logical */
	uint32_t io_min;           /* minimum I/O size, bytes (0 = unknown) */
	uint32_t io_opt;           /* optimal I/O size, bytes (0 = unknown) */
	uint32_t erase_block;      /* erase block / grain hint, bytes (0 = unknown) */
	uint64_t size;             /* bytes (0 = unknown) */
	bool misaligned;           /* kernel said -1: the device's own stacking
	                              is misaligned (libblkid shows 0 for it) */
	enum align_source source;
	uint64_t zone_size;        /* bytes: a host-managed zoned device's zone
	                              (queue/zoned "host-managed", chunk_sectors)
	                              or a zoned octant image's; 0 = not zoned.
	                              Linux allows no partitions on such a disk
	                              (block/genhd.c: GENHD_FL_NO_PART): what a
	                              filesystem must align to is the zone */
};

/*
 * A named partitioning profile: the topology to assume when the target
 * does not say, and where partitions go.
 */
struct align_profile {
	const char *name;          /* "odd", "1m", "legacy", "4kn", "512n", "auto" */
	const char *description;   /* one line for --help and reports */
	bool from_target;          /* "auto": topology comes from the target only */
	uint32_t logical;          /* default topology when the target has none */
	uint32_t physical;
	uint32_t alignment_offset;
	uint64_t grain;            /* bytes between partition starts, measured on
	                              the physical medium (0 = topology's choice) */
	uint64_t first_lba;        /* preferred first partition start, LBA
	                              (0 = first grain-aligned LBA) */
};

/* ---- topology sources ------------------------------------------------ */

/* Fill *t from a block device (libblkid, plus sysfs for the kernel's -1
 * and the discard granularity as erase_block hint; sysfs alone when
 * libblkid may not open the device).  -ENOTBLK if it is not one. */
int align_topology_from_device(const char *path, struct align_topology *t);

/* Fill *t from an octant flash image's superblock.  -EBADMSG if the header
 * is not a valid octant superblock, -EPROTONOSUPPORT for another version. */
int align_topology_from_image(const char *path, struct align_topology *t);

/* Fill *t for a block device served by a live ublk-flash server: the
 * served image's physical geometry (its superblock), the device's logical
 * sector size and size, source ALIGN_SRC_SERVED.  The server's run registry
 * ($UBLK_FLASH_RUN_DIR, default /run/octant) is read directly; an entry
 * counts only while its server holds the lock, when its image is the file
 * the entry was made for, and when the device really is that server's (a
 * loop device's backing file by device and inode, a ublk device's char
 * device held by the recorded pid, a --dm device's only slave), of the
 * image's size.  A partition of such a device: the same geometry with the
 * alignment_offset its start gives, its own size.  With @len, @image
 * receives the image path.  -ENOENT if no live server's entry names @path
 * (or its disk); -ESTALE if one names it (its device or dm device has that
 * number) but does not check out as above: @image then receives the image
 * it records, and the caller should say it keeps the kernel's report
 * (LIBALIGN_DEBUG=1 prints why); -ENOTBLK if it is not a block device.
 * Registry files are read whole, less one final newline (an image path may
 * hold newlines). */
int align_topology_from_served(const char *path, struct align_topology *t,
			       char *image, size_t len);

/* Parse "LOG/PHYS[/OFFSET[/IO_MIN[/IO_OPT]]]" (e.g. "512/4096/3584", or a
 * 3-disk stripe "512/4096/0/12288/36864") into *t; size and erase_block
 * untouched; io_min PHYS unless given; io_opt untouched unless given.
 * -EINVAL on a malformed or impossible spec (LOG / PHYS not powers of two,
 * PHYS < LOG, IO_MIN < PHYS, IO_MIN / IO_OPT / OFFSET not multiples of LOG,
 * OFFSET >= max(PHYS, IO_MIN)). */
int align_topology_parse(const char *spec, struct align_topology *t);

/* Any target: a block device (served by ublk-flash: its image's topology,
 * ALIGN_SRC_SERVED; a registry entry that does not check out is ignored
 * here, align_topology_from_served tells it; holding an octant image itself, e.g. a loop device over
 * the image file: ALIGN_SRC_IMAGE; else the kernel's), an octant image, or
 * (for a plain file) the file size only with source ALIGN_SRC_NONE.  -ENOENT etc. from stat;
 * a file with the octant magic but a bad crc / another version gives
 * -EBADMSG / -EPROTONOSUPPORT (never "plain file"); -EISDIR for a
 * directory, -ENOTBLK for other non-regular files. */
int align_topology_probe(const char *path, struct align_topology *t);

/* What one probe of a target learned, so that a command probes (and reads
 * the run registry) once: align_probe. */
struct align_probe {
	struct align_topology t;  /* align_topology_probe's (t.source: where
	                             it came from) */
	int served;               /* a block device: the run registry's verdict
	                             (align_topology_from_served): 0 served, t
	                             is its image's; -ENOENT no live entry
	                             names it; -ESTALE one does but does not
	                             check out (t is the kernel's, or the
	                             octant image's it holds); another -errno
	                             the registry could not be read.  Else
	                             -ENOTBLK */
	char image[4096];         /* served 0 or -ESTALE: the image the entry
	                             records; else "" */
};

/* align_topology_probe, keeping what it learned on the way in *p (above):
 * its return, and p->t filled as it fills *t. */
int align_probe(const char *path, struct align_probe *p);

/* Fill unknown fields (0 / ALIGN_SRC_NONE) from a profile's defaults. */
void align_topology_apply_profile(struct align_topology *t,
				  const struct align_profile *p);

/* 0 if the topology is self-consistent, else -EINVAL. */
int align_topology_validate(const struct align_topology *t);

/* Print a one-line human description, e.g.
 * "512/4096 offset 3584 io_min 4096 io_opt 262144 (image)". */
int align_topology_describe(const struct align_topology *t, char *buf,
			    size_t len);

/* ---- profiles ---------------------------------------------------------- */

/* Look up a profile by name; NULL if unknown. */
const struct align_profile *align_profile_get(const char *name);

/* The NULL-terminated table of all profiles, for listings. */
const struct align_profile *const *align_profile_list(void);

/* The partition grain of @p on @t, bytes of the medium: the profile's own,
 * or for "auto" max(1 MiB, granularity, io_opt, erase_block), the last two
 * only when sane (<= 1 GiB, multiples of the granularity and of 4 KiB). */
uint64_t align_profile_grain(const struct align_profile *p,
			     const struct align_topology *t);

/* First partition LBA of @p on @t: p->first_lba if it is >= @bound, else
 * the first grain-aligned LBA >= @bound (UINT64_MAX if none). */
uint64_t align_profile_first_lba(const struct align_profile *p,
				 const struct align_topology *t, uint64_t bound);

/* ---- predicates and calculators ---------------------------------------- */

/* Alignment granularity: max(physical, io_min), never 0. */
uint32_t align_granularity(const struct align_topology *t);

/* Is a partition / I/O starting at @lba physically aligned?
 * (gran + off - lba*ls mod gran) mod gran == 0. */
bool align_lba_is_aligned(const struct align_topology *t, uint64_t lba);

/* Is @lba on a @grain-byte boundary of the physical medium (i.e. taking
 * alignment_offset into account)? */
bool align_lba_is_grain_aligned(const struct align_topology *t, uint64_t lba,
				uint64_t grain);

/* Does a partition whose last LBA is @last_lba end on a physical boundary? */
bool align_end_is_aligned(const struct align_topology *t, uint64_t last_lba);

/* First LBA >= @bound that is aligned to @grain bytes on the physical
 * medium (grain 0 = align_granularity()); UINT64_MAX if there is none. */
uint64_t align_first_aligned_lba(const struct align_topology *t,
				 uint64_t bound, uint64_t grain);

/* The largest LBA <= @bound that ends a partition on a @grain boundary
 * (i.e. last+1 is grain-aligned); 0 if none. */
uint64_t align_last_aligned_lba(const struct align_topology *t,
				uint64_t bound, uint64_t grain);

/* The kernel's alignment_offset for a partition starting at @start_lba
 * (queue_limit_alignment_offset()); UINT32_MAX (the kernel's -1, as sysfs
 * prints it) if the device itself is misaligned. */
uint32_t align_partition_offset(const struct align_topology *t,
				uint64_t start_lba);

/* The kernel's alignment_offset for a dm-linear target that starts at
 * 512-byte sector @start_sector of a device with topology @t. */
uint32_t align_dm_linear_offset(const struct align_topology *t,
				uint64_t start_sector);

/* A write/read of @len bytes at byte offset @off: how many physical sectors
 * it touches, and whether it needs a read-modify-write (it covers some
 * physical sector only partly). */
struct align_span {
	uint64_t first_phys;   /* index of the first physical sector touched */
	uint64_t nphys;        /* physical sectors touched */
	bool rmw;              /* a partial physical sector is written */
	bool straddles;        /* touches >1 physical sector though len <= physical */
};
int align_io_span(const struct align_topology *t, uint64_t off, uint64_t len,
		  struct align_span *span);

/* parted-style explanation of why @lba is (not) aligned, e.g.
 * "2048s % 8s != 7s" or "63s % 8s == 7s". Returns snprintf's length. */
int align_explain(const struct align_topology *t, uint64_t lba, char *buf,
		  size_t len);

/* The same against @grain bytes of the medium (0 = granularity), e.g. on
 * the odd profile with 1 MiB: "2055s % 2048s != 2047s". */
int align_explain_grain(const struct align_topology *t, uint64_t lba,
			uint64_t grain, char *buf, size_t len);

/* Parse a size: "4096", "64K", "1MiB", "2G", "1.5GiB", "100s" (sectors of
 * @sector bytes). -EINVAL on junk or overflow. */
int align_parse_size(const char *s, uint32_t sector, uint64_t *bytes);

/* ---- partitions ---------------------------------------------------------- */

/* Make the kernel's partitions of block device @path those of its table
 * (read with libblkid), from userspace with BLKPG as `partx -u` does: for
 * kernels whose own scan finds nothing (no DOS/EFI parser built in), where
 * /dev/loopNp1 would never appear.  Stale partitions are deleted, changed
 * ones re-added, missing ones added, and their /dev nodes awaited (~2 s).
 * Returns how many changed (0: the kernel already agreed), or -errno
 * (-EBUSY: a partition to remove is in use). */
int align_partitions_sync(const char *path);

/* ---- what other tools do on a topology (libalign/predict-*.c) ----------
 *
 * Models of the alignment rules of the partitioning and mkfs tools Debian 12
 * ships, each checked against the real tool (tests/cli/alignpart-predict.bats,
 * tests/vm/guest/align-matrix.sh): given the topology the tool reads
 * (libblkid's: the kernel's queue limits, alignment_offset 0 when the kernel
 * says -1; a regular file shows none: pass logical 512 and zeros) and the
 * device size, what the tool does with its defaults.  LBAs are the tool's
 * own, in @seen->logical sectors. */

enum align_label { ALIGN_LABEL_DOS = 0, ALIGN_LABEL_GPT = 1 };

struct align_tool_result {
	uint64_t start;        /* first partition's first LBA; UINT64_MAX when
	                          the command makes none (fails, or mkfs) */
	uint64_t end;          /* its last LBA (UINT64_MAX: none) */
	uint64_t grain;        /* the grid the tool puts starts on, LBAs (1: any) */
	uint64_t grain_offset; /* ... at this offset, LBAs (< grain) */
	int exit_status;       /* the command's exit status */
	bool warns;            /* says something (below) but goes on */
	bool refuses;          /* exits non-zero: nothing written */
	char says[256];        /* the tool's own words, one line ("" = silent) */
	uint64_t stripe_unit;  /* mkfs: the stripe unit / width it takes from the */
	uint64_t stripe_width; /* device, bytes (0: none); mke2fs: stride and
	                          stripe width in bytes (blocks x block size) */
	uint32_t block_size;   /* mkfs: the filesystem block size, bytes */
};

/* sfdisk / fdisk (libfdisk, util-linux 2.38): the default first partition
 * of a new @label table (`sfdisk DEV` with the script "label: dos" and ","). */
int align_predict_fdisk(const struct align_topology *seen, enum align_label label,
			struct align_tool_result *r);

/* parted 3.5 `-s -a optimal DEV mklabel msdos|gpt mkpart primary START END`
 * (START / END as parted reads them: 0%, 1MiB, 2048s, 1MB, ...): where the
 * partition lands, parted's optimal grid, the warning it prints or the
 * error it fails with.  -EINVAL when START / END do not parse. */
int align_predict_parted(const struct align_topology *seen, enum align_label label,
			 const char *start, const char *end,
			 struct align_tool_result *r);

/* sgdisk / gdisk 1.0.9 `sgdisk -n 1:0:0 DEV` on a blank disk: GPT only. */
int align_predict_sgdisk(const struct align_topology *seen,
			 struct align_tool_result *r);

/* mkfs.xfs 6.1 `mkfs.xfs DEV`: refuses a device with an alignment offset
 * (without -f), the stripe geometry it takes or ignores, block size. */
int align_predict_mkfs_xfs(const struct align_topology *seen,
			   struct align_tool_result *r);

/* mke2fs 1.47 `mke2fs -t ext4 DEV` (Debian's mke2fs.conf): the offset
 * warning, RAID stride / stripe width, block size. */
int align_predict_mke2fs(const struct align_topology *seen,
			 struct align_tool_result *r);

/* libalign version string, e.g. "0.1.0". */
const char *align_version(void);

#ifdef __cplusplus
}
#endif
#endif /* OCTANT_ALIGN_H */
