/* SPDX-License-Identifier: MIT */
/*
 * nbd-exercise — drive an NBD export the way a demanding client would and
 * keep a shadow of what it must hold (tests/integration/nbd-*.bats):
 *
 *   nbd-exercise URI write NOPS SHADOW   random writes (aligned and not,
 *       FUA or not), WRITE_ZEROES (may-trim or not) and TRIMs, then FLUSH;
 *       the expected content goes to the file SHADOW.  Seed: OCTANT_SEED,
 *       else fresh (printed).
 *   nbd-exercise URI verify SHADOW       the export must equal SHADOW.
 *   nbd-exercise URI fua-flush N         N FUA writes and N FLUSHes.
 *   nbd-exercise URI expect-error        a write+flush must fail (the
 *       server's error, e.g. EIO), and the error is printed.
 *
 * Exit 0 good, 1 mismatch/failure, 2 usage or connection trouble.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "test.h"

#define SECT 512u

static struct nbd_handle *connect_uri(const char *uri, int64_t *size)
{
	struct nbd_handle *h = nbd_create();

	/* Send sub-512 requests anyway (libnbd would refuse them on the
	 * server's advertised minimum): a server must survive clients that
	 * ignore block size constraints, and nbdkit passes them through. */
	if (!h || nbd_set_strict_mode(h, LIBNBD_STRICT_MASK &
				      ~LIBNBD_STRICT_ALIGN) < 0 ||
	    nbd_connect_uri(h, uri) < 0 || (*size = nbd_get_size(h)) < 0) {
		fprintf(stderr, "nbd-exercise: %s: %s\n", uri, nbd_get_error());
		exit(2);
	}
	return h;
}

static int do_write(struct nbd_handle *h, uint8_t *shadow, uint64_t size,
		    unsigned nops)
{
	uint64_t s = (uint64_t)t_seed() * 2654435761u | 1;
	uint8_t *buf = malloc(1 << 18);
	unsigned counts[5] = { 0 };

	for (unsigned i = 0; i < nops; i++) {
		unsigned kind = (unsigned)(t_xorshift(&s) % 10);
		uint64_t off, len;
		int r;

		if (kind < 4) {                 /* aligned write, 4K units */
			len = (t_xorshift(&s) % 64 + 1) * 4096;
			off = t_xorshift(&s) % ((size - len) / 4096 + 1) * 4096;
		} else {                        /* any bytes */
			len = t_xorshift(&s) % 20000 + 1;
			off = t_xorshift(&s) % (size - len + 1);
		}
		if (kind < 7) {
			for (uint64_t j = 0; j < len; j++)
				buf[j] = (uint8_t)(t_xorshift(&s) >> 24);
			uint32_t fl = (t_xorshift(&s) & 3) ? 0 : LIBNBD_CMD_FLAG_FUA;
			r = nbd_pwrite(h, buf, len, off, fl);
			memcpy(shadow + off, buf, len);
			counts[kind < 4 ? 0 : 1]++;
		} else if (kind < 9) {          /* write zeroes */
			uint32_t fl = (t_xorshift(&s) & 1) ? LIBNBD_CMD_FLAG_NO_HOLE : 0;
			r = nbd_zero(h, len, off, fl);
			memset(shadow + off, 0, len);
			counts[2]++;
		} else {                        /* trim: whole sectors read 0 */
			uint64_t a0 = (off + SECT - 1) / SECT * SECT;
			uint64_t a1 = (off + len) / SECT * SECT;
			r = nbd_trim(h, len, off, 0);
			if (a1 > a0)
				memset(shadow + a0, 0, a1 - a0);
			counts[3]++;
		}
		if (r < 0) {
			fprintf(stderr, "nbd-exercise: op %u: %s\n", i, nbd_get_error());
			return 1;
		}
	}
	if (nbd_flush(h, 0) < 0) {
		fprintf(stderr, "nbd-exercise: flush: %s\n", nbd_get_error());
		return 1;
	}
	printf("wrote: %u aligned, %u unaligned, %u zero, %u trim; flushed\n",
	       counts[0], counts[1], counts[2], counts[3]);
	free(buf);
	return 0;
}

static int do_verify(struct nbd_handle *h, const uint8_t *shadow,
		     uint64_t size)
{
	uint8_t *buf = malloc(1 << 20);

	for (uint64_t off = 0; off < size; off += 1 << 20) {
		size_t n = size - off < (1 << 20) ? (size_t)(size - off) : 1 << 20;
		if (nbd_pread(h, buf, n, off, 0) < 0) {
			fprintf(stderr, "nbd-exercise: read at %" PRIu64 ": %s\n",
				off, nbd_get_error());
			return 1;
		}
		for (size_t j = 0; j < n; j++)
			if (buf[j] != shadow[off + j]) {
				fprintf(stderr, "nbd-exercise: MISMATCH at byte "
					"%" PRIu64 " (sector %" PRIu64 "): %02x, "
					"expected %02x\n", off + j,
					(off + j) / SECT, buf[j], shadow[off + j]);
				return 1;
			}
	}
	printf("verified %" PRIu64 " bytes\n", size);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct nbd_handle *h;
	uint8_t *shadow;
	int64_t size;
	FILE *fp;
	int r = 2;

	if (argc < 3) {
		fprintf(stderr, "usage: nbd-exercise URI write NOPS SHADOW | "
			"verify SHADOW | expect-error\n");
		return 2;
	}
	h = connect_uri(argv[1], &size);
	if (!strcmp(argv[2], "expect-error")) {
		uint8_t b[4096];
		memset(b, 0x5a, sizeof(b));
		if (nbd_pwrite(h, b, sizeof(b), 0, LIBNBD_CMD_FLAG_FUA) < 0 ||
		    nbd_flush(h, 0) < 0) {
			printf("error as expected: %s (errno %d)\n", nbd_get_error(),
			       nbd_get_errno());
			r = 0;
		} else {
			printf("nbd-exercise: the write succeeded\n");
			r = 1;
		}
	} else if (argc == 4 && !strcmp(argv[2], "fua-flush")) {
		/* N FUA writes and N FLUSHes: the server's counters tell
		 * whether they reached the engine as such */
		uint8_t b[4096];
		int n = atoi(argv[3]);
		memset(b, 0xa5, sizeof(b));
		r = 0;
		for (int i = 0; i < n && !r; i++)
			if (nbd_pwrite(h, b, sizeof(b), (uint64_t)i * 4096,
				       LIBNBD_CMD_FLAG_FUA) < 0 ||
			    nbd_flush(h, 0) < 0) {
				fprintf(stderr, "nbd-exercise: %s\n", nbd_get_error());
				r = 1;
			}
	} else if (argc == 5 && !strcmp(argv[2], "write")) {
		shadow = calloc(1, (size_t)size);
		fp = fopen(argv[4], "rb");      /* continue an earlier shadow */
		if (fp) {
			if (fread(shadow, 1, (size_t)size, fp) != (size_t)size)
				memset(shadow, 0, (size_t)size);
			fclose(fp);
		}
		r = do_write(h, shadow, (uint64_t)size, (unsigned)atoi(argv[3]));
		fp = fopen(argv[4], "wb");
		if (!fp || fwrite(shadow, 1, (size_t)size, fp) != (size_t)size ||
		    fclose(fp))
			r = 2;
		free(shadow);
	} else if (argc == 4 && !strcmp(argv[2], "verify")) {
		shadow = calloc(1, (size_t)size);
		fp = fopen(argv[3], "rb");
		if (!fp || fread(shadow, 1, (size_t)size, fp) != (size_t)size) {
			fprintf(stderr, "nbd-exercise: %s: cannot read\n", argv[3]);
			return 2;
		}
		fclose(fp);
		r = do_verify(h, shadow, (uint64_t)size);
		free(shadow);
	}
	nbd_shutdown(h, 0);
	nbd_close(h);
	return r ? r : t_failures;
}
