/* SPDX-License-Identifier: MIT */
/* CRC-32C (Castagnoli), as used by every octant on-medium structure. */
#ifndef OCTANT_CRC32C_H
#define OCTANT_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C over @len bytes; start with crc = 0. */
uint32_t oct_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
