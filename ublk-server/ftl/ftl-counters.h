/* SPDX-License-Identifier: MIT */
/*
 * The engine's monotonic counters, listed once.  Each X(name, src) entry
 * generates a field of the checkpointed counters (struct ftl_ckpt_counters,
 * on the medium: order matters; FTL_COUNTERS is closed, a new counter goes
 * at the end of FTL_LIFE_COUNTERS with a new checkpoint version), of the
 * public stats
 * (struct ftl_stats) and its stats keys, and the snapshot that adds this
 * mount's increments to the checkpointed base.  @src says where a mount's
 * increments come from: ENG (an engine atomic, struct ftl_mctr) or NAND
 * (the nand's counter of that name, as a delta since the mount), OPEN
 * (counted into the base by a read-write open: ftl_mount) or TIME (seconds
 * since a read-write open).
 *
 * FTL_LIFE_COUNTERS are checkpointed too, after the others (checkpoint
 * header version 5 and delta version 2 on: older checkpoints read them as
 * 0): what a drive's health log reports (ftl_health, ublk-flash(8)
 * HEALTH): read / write requests the engine completed (whatever their
 * size), requests that failed with EIO (media and data integrity errors),
 * read-write opens (a mount killed before its first checkpoint is counted
 * by the next open: its mount marker says it happened), opens that had to
 * roll forward (the session before did not end with a clean checkpoint),
 * and seconds served read-write.
 *
 * FTL_MOUNT_COUNTERS are counted per mount only (not in checkpoints: the
 * v1 checkpoint header has no room for them); they still appear in stats:
 * program/erase failures, bits the ECC corrected, codewords beyond it
 * (the fault model, nand-fault.h), reads retried after an uncorrectable
 * result, pages rewritten by scrub, pages moved off retired blocks, host
 * page reads failed because the page did not match its OOB record (lpn,
 * data CRC: an erased page, another page's data, bits the ECC missed),
 * bytes of pages programmed by checkpoints (header, payload and mount
 * marker: what checkpoints cost the medium), garbage collection run by a
 * host write in its own critical section (foreground: the writer waited),
 * victims emptied and erase rounds done by the background GC thread,
 * errors that thread hit (each one also failed the next host write), and
 * flush summary pages programmed (what the proof of host flushes costs,
 * ftl_fsum.c), waits of writers at the reserve for the GC thread
 * (ftl_bggc_throttle), writes paced below its high watermark
 * (ftl_bggc_pace), and host writes ftl_write_try served without
 * waiting / turned back with -EAGAIN (the ublk ring thread's inline
 * writes, ublk-queue.c), and writes or syncs of the medium's store
 * refused for want of room (ENOSPC, EDQUOT: nand_store_full).
 */
#ifndef OCTANT_FTL_COUNTERS_H
#define OCTANT_FTL_COUNTERS_H

#define FTL_COUNTERS(X) \
	X(host_read_sectors,    ENG)   \
	X(host_write_sectors,   ENG)   \
	X(host_flushes,         ENG)   \
	X(host_fua,             ENG)   \
	X(host_discard_sectors, ENG)   \
	X(page_reads,           NAND_reads)      \
	X(page_programs,        NAND_programs)   \
	X(block_erases,         NAND_erases)     \
	X(rmw_subpage,          ENG)   \
	X(rmw_straddle,         ENG)   \
	X(gc_relocations,       ENG)   \
	X(wl_relocations,       ENG)   \
	X(ckpt_writes,          ENG)   \
	X(nand_violations,      NAND_violations)

#define FTL_LIFE_COUNTERS(X) \
	X(host_read_commands,   ENG)   \
	X(host_write_commands,  ENG)   \
	X(media_errors,         ENG)   \
	X(power_cycles,         OPEN)  \
	X(unsafe_shutdowns,     OPEN)  \
	X(power_on_seconds,     TIME)

#define FTL_MOUNT_COUNTERS(X) \
	X(program_fails,        NAND_program_fails)      \
	X(erase_fails,          NAND_erase_fails)        \
	X(ecc_corrected_bits,   NAND_ecc_corrected_bits) \
	X(ecc_uncorrectable,    NAND_ecc_uncorrectable)  \
	X(read_retries,         ENG)   \
	X(scrubbed_pages,       ENG)   \
	X(bad_relocations,      ENG)   \
	X(read_crc_errors,      ENG)   \
	X(ckpt_bytes,           ENG)   \
	X(gc_fg_runs,           ENG)   \
	X(gc_bg_victims,        ENG)   \
	X(gc_bg_erase_rounds,   ENG)   \
	X(gc_bg_errors,         ENG)   \
	X(fsum_pages,           ENG)   \
	X(gc_throttled,         ENG)   \
	X(gc_paced,             ENG)   \
	X(write_try_served,     ENG)   \
	X(write_try_again,      ENG)   \
	X(store_full,           NAND_store_full)

#endif
