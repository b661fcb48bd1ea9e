/* SPDX-License-Identifier: MIT */
/*
 * nand — emulated NAND flash on a byte-addressable backing (image file,
 * block device, or memory for tests).  Prefix nand_, 0 / -errno returns.
 *
 * Geometry: nblocks erase blocks of ppb pages of page_size bytes.  Two
 * layouts: "separate" puts the data of page p at flash_off + p * page_size
 * and its out-of-band (OOB) bytes at oob_off + p * oob_size; "inline"
 * (oob_inline) stores page p as one slot of page_size + oob_size bytes at
 * flash_off + p * (page_size + oob_size), its OOB right after its data
 * (oob_off unused), so a program is one backing write.  NAND rules are
 * enforced: inside an erase block pages are programmed in ascending order, each at most once between
 * erases (a page below the block's write pointer cannot be programmed);
 * erase is per block; data reads of erased pages return 0xff.  A violation
 * is counted and fails with -EIO.
 *
 * Durability: programs and erases may sit in the host page cache (a
 * volatile write cache) until nand_sync().  A program returns only when
 * its data and OOB are both in the backing (a killed server whose page
 * cache survives loses nothing): inline, one pwrite of data and OOB (a
 * run of pages of one block, nand_program_run: one pwritev for all);
 * separate, a pwrite of the data and one of the OOB (OOB bytes are also
 * kept per block in a few buffers for nand_read_block_oob).
 *
 * Failed programs: a program that fails with an error of the backing
 * (not a status FAIL) leaves no page whose OOB checks out: what it wrote
 * is undone before it returns (nand.c, prog_undo).  When that cannot be
 * made sure the nand is failed: every later program, erase and sync
 * returns -EIO (nand_failed()).  Mapped backings: a SIGBUS in a copy
 * through the mapping (a file truncated underneath) is caught and the
 * copy goes through pread / pwrite, which fail (nand_guard.c).
 *
 * Threads: nand_read(), nand_read_run() and nand_read_run_view() may run
 * concurrently with anything except an erase of the same block (the
 * caller excludes that; for the pointers of nand_read_run_view, as long
 * as it uses them);
 * so may nand_program_run() when nand_program_run_unlocked() says so,
 * except with a program, erase or another run of the same block (the
 * caller orders those); every other call must be serialized by the
 * caller.
 */
#ifndef OCTANT_NAND_H
#define OCTANT_NAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nand-fault.h"

struct nand_backing;

struct iovec;

/* Byte store under the flash.  pread/pwrite transfer everything or fail.
 * preadv/pwritev are optional (NULL: the nand issues one pread/pwrite per
 * iovec instead); when present they transfer everything or fail.  A
 * failed write may have written any part of its bytes.  -ENXIO: the range
 * reaches past the end of the store (a file truncated underneath), nothing
 * transferred; from sync: synced, but the store lost its end (the nand
 * reports either as -EIO). */
struct nand_backing_ops {
	int (*pread)(struct nand_backing *b, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct nand_backing *b, const void *buf, size_t len,
		      uint64_t off);
	/* Make [off, off+len) read as zeroes (and free the space if possible). */
	int (*punch)(struct nand_backing *b, uint64_t off, uint64_t len);
	/* Make every earlier pwrite/punch durable (a write-cache flush). */
	int (*sync)(struct nand_backing *b);
	void (*destroy)(struct nand_backing *b);
	/* Optional: lseek SEEK_DATA / SEEK_HOLE; -1 when none. */
	int64_t (*seek)(struct nand_backing *b, uint64_t off, int whence);
	/* Optional: vectored transfers of consecutive bytes from @off. */
	int (*preadv)(struct nand_backing *b, const struct iovec *iov, int cnt,
		      uint64_t off);
	int (*pwritev)(struct nand_backing *b, const struct iovec *iov, int cnt,
		       uint64_t off);
	/* Optional: the bytes [off, off + len) as a read-only mapping that
	 * sees every pwrite and punch at once (the page cache itself), to
	 * copy from instead of a pread; NULL when they are not mapped. */
	const void *(*view)(struct nand_backing *b, uint64_t off, uint64_t len);
	/* With view: how many bytes from @off (at most @len) are allocated
	 * and in memory, so that reading them through the mapping allocates
	 * nothing (a read fault on a tmpfs hole would); 0 when unknown. */
	uint64_t (*resident)(struct nand_backing *b, uint64_t off,
			     uint64_t len);
	/* Optional, with view: the same bytes writable (a store is a write
	 * of the file, as a pwrite that returned); NULL when not writable. */
	void *(*wview)(struct nand_backing *b, uint64_t off, uint64_t len);
	/* Optional, with view: a copy through the mapping at @off took a
	 * SIGBUS (caught: nand_guard.c).  Look at the store: a file truncated
	 * underneath has lost everything past its new end (said once on
	 * stderr; I/O there fails from now on), else stop handing out the
	 * mapping.  Returns the access's error, -EIO. */
	int (*mapfault)(struct nand_backing *b, uint64_t off);
};

struct nand_backing {
	const struct nand_backing_ops *ops;
};

/* A backing over an open file descriptor (not closed by destroy).  A
 * regular file on tmpfs is also mapped for view() (and, open O_RDWR, for
 * wview()): memory cannot fail a read, and a memcpy from or to the mapping
 * costs a fraction of pread's or pwrite's copy (under QEMU's TCG 1.1
 * against 12 us a page; docs/ublk.md).  OCTANT_BACKING_MAP=0 in the
 * environment turns the mapping off, =ro keeps it for reads only. */
int nand_backing_fd(int fd, struct nand_backing **out);

/*
 * A backing in memory, @size bytes of zeroes.  With @powercut, every write
 * since the last sync is logged so nand_mem_crash_image() can build the
 * image a power cut would leave.
 */
int nand_backing_mem(uint64_t size, bool powercut, struct nand_backing **out);

/*
 * A backing on the NBD export named by @uri (nbd://, nbds://, nbd+unix://,
 * ...; libnbd), its size in @size.  -EROFS a read-only export opened for
 * writing, -EOPNOTSUPP an export that cannot flush (durability impossible),
 * else the connection's errno.  nand_backing_nbd_error(): libnbd's last
 * message in this thread, for a one-line report.
 */
int nand_backing_nbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size);
const char *nand_backing_nbd_error(void);
/* True when @path is an NBD URI rather than a file or device path. */
bool nand_backing_is_nbd(const char *path);

/*
 * A backing on the Ceph RBD image named by @uri:
 * rbd://POOL[/NAMESPACE]/IMAGE[@SNAP][?KEY=VALUE&...] (librbd; options:
 * conf=, id=, keyring=, mon_host=, cluster=, timeout=SECONDS, any Ceph
 * option), its size in @size.  Read-write, the image's RBD exclusive lock
 * is taken and held until destroy: -EBUSY when another client holds it,
 * -EOPNOTSUPP an image without the exclusive-lock feature; a snapshot
 * (@SNAP) only read-only (-EROFS).  Requests fail with -ETIMEDOUT after
 * timeout= seconds (default 30) of a dead or slow cluster.
 * nand_backing_rbd_error(): why the last call of this thread failed (one
 * line naming the URI; NULL: only the errno is known).
 */
int nand_backing_rbd(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size);
const char *nand_backing_rbd_error(void);
bool nand_backing_is_rbd(const char *path);
/* Make @uri's image, @size bytes, unless it exists: 1 made, 0 it exists. */
int nand_backing_rbd_create(const char *uri, uint64_t size);
/* Who holds @uri's exclusive lock, one phrase into @buf ("locked by ..."). */
int nand_backing_rbd_holder(const char *uri, char *buf, size_t len);

/* True when @path names a remote medium (NBD or RBD URI) rather than a
 * file or device path. */
bool nand_backing_is_uri(const char *path);
/* The backing of a remote medium: nand_backing_nbd or nand_backing_rbd. */
int nand_backing_uri(const char *uri, bool readonly,
		     struct nand_backing **out, uint64_t *size);
/* Why the last nand_backing_uri() of this thread failed, one line, or
 * NULL when the errno says it all. */
const char *nand_backing_uri_error(const char *uri);

/*
 * Zero bytes [0, @len) of a reused medium (a device or an export that held
 * something) before a create: the first @head bytes (where the old
 * superblocks sit) first, synced, then the rest, synced (nothing the
 * create writes next can land before the zeroes).  Cut short anywhere, it
 * leaves either the old image whole (a cut tearing the first step may
 * zero one superblock copy: fsck --repair rewrites it) or no superblock at
 * all, never an old image that opens half zeroed (one punch of
 * everything, torn by a power cut, could keep a superblock and lose the
 * metadata under it).
 */
int nand_backing_wipe(struct nand_backing *b, uint64_t head, uint64_t len);

/*
 * Write @good (@len bytes) over each copy i of a two-copy structure (a
 * superblock, a set header) whose bit is set in @bad, at @at[i], then
 * sync; unless @what is NULL (fsck --repair reports it itself), one line
 * on stderr a copy ("ublk-flash: WHAT copy I rewritten from copy J
 * (WHY)").  0, or the first write's or the sync's -errno.
 */
int nand_backing_mend(struct nand_backing *b, const void *good, size_t len,
		      const uint64_t at[2], int bad, const char *what,
		      const char *why);

/*
 * A window: bytes [@off, @off + @len) of @parent as a backing of @len
 * bytes (several engines in one image: ftl/ftl_set.c).  Every op is
 * @parent's with @off added; pread / pwrite / punch / preadv / pwritev
 * past @len fail with -EIO (nothing transferred), view / wview there are
 * NULL, resident is cut at @len; seek answers are window offsets (data past
 * the end: -1 with ENXIO, a hole past it: @len); sync syncs all of
 * @parent.  The optional ops are there only when @parent has them.  The
 * caller keeps owning @parent, which must outlive the window: destroy
 * frees the window only.  -EINVAL @off + @len overflows.
 */
int nand_backing_window(struct nand_backing *parent, uint64_t off,
			uint64_t len, struct nand_backing **out);

/* The memory backing's current bytes (for tests; NULL and size 0 for
 * another backing). */
uint8_t *nand_mem_bytes(struct nand_backing *b, uint64_t *size);

/*
 * Power-cut simulation: write into @out (size bytes) the image left by a
 * power cut now: everything up to the last sync, then, chosen by @seed,
 * either a prefix or an arbitrary subset of the later writes (in order),
 * with one of them torn (only some of its 512-byte sectors written) unless
 * @tear is false.  Returns the number of later writes that were pending.
 */
long nand_mem_crash_image(struct nand_backing *b, uint64_t seed, bool tear,
			  uint8_t *out);

/* The image a kill -9 of the process would leave now (size bytes into
 * @out): every write so far, whole (the page cache keeps what a write
 * call put there; the engine's own writes are not torn by a kill between
 * them, and the trigger fires between two). */
void nand_mem_kill_image(struct nand_backing *b, uint8_t *out);

/* Call @fn(@ctx) just after the @n-th next write reaches the memory
 * backing (0 cancels): lets a test cut the power inside an operation. */
void nand_mem_set_trigger(struct nand_backing *b, uint64_t n,
			  void (*fn)(void *ctx), void *ctx);
/* Reference counting: hold() adds a holder, destroy() drops one. */
void nand_mem_hold(struct nand_backing *b);
/* Replace the bytes with @img (size bytes) and forget pending writes. */
void nand_mem_load(struct nand_backing *b, const uint8_t *img);
void nand_mem_power_on(struct nand_backing *b);

/* After this, the memory backing silently drops every write (the power is
 * off): lets a test close an engine without touching the crash image. */
void nand_mem_power_off(struct nand_backing *b);

struct nand_geom {
	uint32_t page_size, oob_size, ppb, nblocks;
	uint64_t flash_off, oob_off;
	bool oob_inline;      /* the inline layout (above); false: separate */
	bool oob_stamp;       /* inline only: erase stamps (below) */
};

/*
 * Erase stamps (oob_stamp, the inline layout of images with
 * OCT_SB_F_OOB_STAMP): the last NAND_STAMP_SIZE bytes of every page's OOB
 * belong to the nand.  A program writes there the block's generation (its
 * erase count when it was last erased); an erase writes one erase stamp
 * (a new, higher generation) into page 0's OOB slot instead of zeroing
 * the block.  Every OOB the nand hands out (nand_read_oob,
 * nand_read_block_oob, nand_read_run) reads as all zero (erased) unless its
 * page carries a program stamp of the block's current generation (page
 * 0's stamp); those bytes read as zero in it.  Needs a geometry where no
 * OOB crosses a 512-byte sector (nand_stamp_geom_ok).
 */
#define NAND_STAMP_SIZE 16u
bool nand_stamp_geom_ok(const struct nand_geom *g);

/* Fault-injection seam: called before every operation; a negative return
 * fails it with that error (NAND_OP_READ may instead flip bits in @buf and
 * return 0).  @page is the page number (block number for erase). */
enum nand_op { NAND_OP_READ, NAND_OP_PROGRAM, NAND_OP_ERASE };
typedef int (*nand_fault_fn)(void *ctx, enum nand_op op, uint64_t page,
			     void *buf, size_t len);

struct nand_counters {
	uint64_t reads, programs, erases, violations, faults, syncs;
	/* the fault model (nand-fault.h); bad blocks count as failures */
	uint64_t program_fails, erase_fails;
	uint64_t ecc_corrected_bits;     /* bits the ECC corrected */
	uint64_t ecc_uncorrectable;      /* codewords beyond the ECC */
	/* calls into the backing (each ~ one syscall on a file) */
	uint64_t backing_reads, backing_writes;
	/* bytes read from the backing into memory (calls, or copies through
	 * its mapping); pages handed out by pointer (nand_read_run_view) are
	 * not read */
	uint64_t read_bytes;
	/* backing writes and syncs refused for want of room (ENOSPC,
	 * EDQUOT: the filesystem under an image full, a quota); each one
	 * failed what it was part of (nand_store_full) */
	uint64_t store_full;
};

struct nand;

/* Wrap @b (which the nand then owns). Every block starts "fully programmed"
 * (write pointer = ppb) until the owner sets the real state. */
int nand_create(struct nand_backing *b, const struct nand_geom *g,
		struct nand **out);
void nand_destroy(struct nand *n);
/* Hand the backing back: nand_destroy() will then leave it alone. */
struct nand_backing *nand_detach(struct nand *n);
const struct nand_geom *nand_geom(const struct nand *n);
struct nand_backing *nand_backing(struct nand *n);

/* Read @len bytes at @off inside page @ppn; erased pages read 0xff.
 * With a fault model, -EBADMSG when a codeword is beyond the ECC. */
int nand_read(struct nand *n, uint64_t ppn, uint32_t off, void *buf,
	      uint32_t len);
/* The same, reporting what the ECC did in @e (may be NULL). */
int nand_read_ecc(struct nand *n, uint64_t ppn, uint32_t off, void *buf,
		  uint32_t len, struct nand_ecc *e);
/*
 * Read @count consecutive whole pages from @ppn (they may span blocks)
 * with as few backing calls as possible (one per run on the inline layout
 * with preadv, else one for the data and one for the OOB): data into @buf
 * (count * page_size), raw OOB into @oob (count * oob_size), and each
 * page's result into @res[i] (0, or -EIO when the fault hook failed it;
 * pages past their block's write pointer read 0xff).  -EOPNOTSUPP when a
 * fault model covers the range: read such pages one by one through
 * nand_read_ecc.  Counts @count reads.
 */
int nand_read_run(struct nand *n, uint64_t ppn, uint32_t count, void *buf,
		  void *oob, int *res);
/*
 * nand_read_run without reading the data: @pages[i] points at page i's
 * data in the backing's mapping (view), the OOB records are read into @oob
 * and @res[i] is 0.  Only where a read could not differ from the stored
 * bytes: a mapped backing, no fault hook or model, every page below its
 * block's write pointer and proven allocated; else -EOPNOTSUPP (read the
 * run).  The pointers are good until one of these blocks is erased (the
 * caller excludes that while it uses them, as for a read) and only to
 * program from (nand_program_runv, nand_program: their copies from the
 * mapping are guarded, as a SIGBUS there -- a file truncated underneath --
 * must become an error, nand_guard.c): never read them directly.
 */
int nand_read_run_view(struct nand *n, uint64_t ppn, uint32_t count,
		       const void **pages, void *oob, int *res);
/* The bytes stored in a whole page (0xff past the write pointer), without
 * the fault model's read errors or injection: what a page's CRC was
 * computed over (the FTL checks partial reads against it). */
int nand_read_raw(struct nand *n, uint64_t ppn, void *buf);
/* Raw OOB of one page / of all ppb pages of a block (no erased check). */
int nand_read_oob(struct nand *n, uint64_t ppn, void *oob);
int nand_read_block_oob(struct nand *n, uint32_t blk, void *buf);
/* Program one page: page_size bytes of @data and oob_size bytes of @oob.
 * -NAND_EFAIL: the program failed (the page is used up, reads back as
 * garbage with an erased OOB; retire the block). */
int nand_program(struct nand *n, uint64_t ppn, const void *data,
		 const void *oob);
/*
 * Program @count consecutive pages of one block from @ppn (the run may not
 * cross a block): data from @data (count * page_size), OOB from @oob
 * (count * oob_size).  On the inline layout with a vectored backing, one
 * backing write per run (NAND_IOV_MAX / 2 pages), a single page too; else
 * (separate layout, a fault hook or model, a bad block) page by page
 * through nand_program,
 * each judged alone.  *done: pages programmed, from the first, whatever
 * the result; on an error the run stops there: -NAND_EFAIL as
 * nand_program (page *done is used up), -EIO a page below the write
 * pointer (nothing programmed), -EINVAL a run past its block, else the
 * backing's error (page *done and later are not programmed).
 */
int nand_program_run(struct nand *n, uint64_t ppn, uint32_t count,
		     const void *data, const void *oob, uint32_t *done);
/* The same with page i's data at @pages[i] (a victim's pages in the
 * backing's mapping, nand_read_run_view, or in a buffer): no staging copy
 * of the run. */
int nand_program_runv(struct nand *n, uint64_t ppn, uint32_t count,
		      const void *const *pages, const void *oob,
		      uint32_t *done);
/* True when nand_program_run() writes a run with one vectored backing
 * call and may run outside the caller's lock (see Threads above): the
 * inline layout, a backing with pwritev, no fault hook and no fault model
 * (and the block not marked bad). */
bool nand_program_run_unlocked(const struct nand *n);
/*
 * Erase-count ceiling: a block's erase count (and erase-stamp generation)
 * never passes it.  Parts are rated 10^3 (TLC) to 10^5 (SLC, some 10^6)
 * cycles; this is 16x the best rating, so an emulated device does not
 * wear out in use, and a count above it read from the medium (an OOB
 * record, a checkpoint's block table, an erase stamp) can only be damaged
 * or forged: it does not check out.  A block that reaches it fails its
 * next erase (worn out: the FTL retires it), so nothing can wrap.
 */
#define NAND_EC_MAX (1u << 24)

/* Erase a block: its pages read 0xff and may be programmed again.
 * -NAND_EFAIL: the erase failed (the block is as before; retire it), also
 * when its erase count (or generation) is at NAND_EC_MAX: worn out.
 * With oob_stamp one erase stamp is written (the first erase of a block
 * after nand_create may read the block's OOB once) and the erase count
 * becomes its generation: one more than the erase count or than any stamp
 * found in the block, whichever is higher. */
int nand_erase(struct nand *n, uint32_t blk);
/* Flush the backing's write cache (separate layout: OOB buffers first). */
int nand_sync(struct nand *n);
/* nand_sync in two halves: nand_sync_begin writes the OOB buffers back
 * (serialized like any call); nand_sync_backing, which may then run
 * concurrently with anything (Threads), flushes the backing's cache: it
 * makes durable at least what was written before nand_sync_begin. */
int nand_sync_begin(struct nand *n);
int nand_sync_backing(struct nand *n);
/* True once a failed program could not be undone (see the top): nothing
 * is written any more. */
bool nand_failed(const struct nand *n);

/* Set a block's write pointer (pages programmed) and erase count, e.g.
 * from a checkpoint. */
void nand_set_block(struct nand *n, uint32_t blk, uint32_t wp, uint32_t ec);
uint32_t nand_block_wp(const struct nand *n, uint32_t blk);
uint32_t nand_block_ec(const struct nand *n, uint32_t blk);

/* True when the OOB bytes of block @blk are certainly all zero: the backing
 * has a hole there (a sparse file), or this nand erased the block and
 * nothing was written into it since (no backing call then).  Scans skip
 * such blocks. */
bool nand_block_oob_hole(struct nand *n, uint32_t blk);

void nand_set_fault(struct nand *n, nand_fault_fn fn, void *ctx);

/* A program or erase the medium reports as failed (status FAIL, from the
 * fault model or a bad block), unlike -EIO of the backing. */
#define NAND_EFAIL EREMOTEIO

/* Install the fault model of @s (NULL: none) for blocks >= @first (the
 * blocks below are the guaranteed-good system area, as NAND parts
 * guarantee block 0); -EINVAL if its codeword does not divide the page.
 * Call with no other operation running. */
int nand_set_fault_model(struct nand *n, const struct nand_fault_spec *s,
			 uint32_t first);
/* The model's ECC strength, bits per codeword (0: no model). */
uint32_t nand_fault_ecc(const struct nand *n);
/* The model's codeword size in bytes (0: no model). */
uint32_t nand_fault_cw(const struct nand *n);
/* Add @bits persistent bit errors to codeword @cw of page @ppn (until its
 * block is erased); needs a model.  Tests; serialised like programs. */
int nand_fault_inject_bits(struct nand *n, uint64_t ppn, uint32_t cw,
			   uint32_t bits);
/* A bad block fails every program and erase with -EIO. */
void nand_mark_bad(struct nand *n, uint32_t blk, bool bad);
bool nand_is_bad(const struct nand *n, uint32_t blk);
void nand_counters_get(const struct nand *n, struct nand_counters *c);

#endif /* OCTANT_NAND_H */
