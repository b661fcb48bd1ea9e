/* SPDX-License-Identifier: MIT */
/* CRC-32C (Castagnoli), as used by every octant on-medium structure. */
#ifndef OCTANT_CRC32C_H
#define OCTANT_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C over @len bytes; start with crc = 0. */
uint32_t oct_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * The implementations behind oct_crc32c; every one gives the same CRC.
 * The first call picks one for the process by timing hw3 and table over a
 * 4 KiB buffer (~60 us natively, once), as the kernel picks its RAID6 / xor
 * routines: on real x86 the SSE4.2 crc32 instruction (three lanes) is 10x
 * faster than the table, but QEMU's TCG runs every crc32 instruction as a
 * helper call that shifts the register one bit at a time, and there the
 * table is ~3x faster (docs/ublk.md, "Where the guest's CPU goes").
 * OCTANT_CRC32C=hw3|hw1|table forces one (tests, measurements); an unknown
 * or unavailable name is reported once on stderr and ignored.
 */
enum oct_crc32c_impl {
	OCT_CRC32C_HW3,     /* SSE4.2 crc32, three interleaved lanes */
	OCT_CRC32C_HW1,     /* SSE4.2 crc32, one dependency chain */
	OCT_CRC32C_TABLE,   /* slicing-by-8, 8 KiB of tables, any CPU */
	OCT_CRC32C_NIMPL
};

/* 1 when @impl can run on this CPU. */
int oct_crc32c_impl_ok(enum oct_crc32c_impl impl);
/* Its short name (hw3, hw1, table), NULL for a bad @impl. */
const char *oct_crc32c_impl_name(enum oct_crc32c_impl impl);
/* oct_crc32c through @impl, which must be ok. */
uint32_t oct_crc32c_with(enum oct_crc32c_impl impl, uint32_t crc,
			 const void *buf, size_t len);
/* The one oct_crc32c uses (calibrating first if it has not yet). */
enum oct_crc32c_impl oct_crc32c_chosen(void);

#endif
