/* SPDX-License-Identifier: MIT */
/* Byte-granular writes over the sector engine (see byteio.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "byteio.h"

#define SECT_DOWN(x) ((x) & ~(uint64_t)(FTL_SECTOR - 1))
#define SECT_UP(x)   SECT_DOWN((x) + FTL_SECTOR - 1)

int fe_byteio_rmw(struct ftl_set *f, pthread_mutex_t *rmw_lock, void *buf,
		  size_t buflen, const void *data, uint64_t o, size_t size,
		  unsigned flags)
{
	uint64_t a0 = SECT_DOWN(o), a1 = SECT_UP(o + size);
	void *heap = NULL;
	int err;

	if (!buf || a1 - a0 > buflen) {
		if (posix_memalign(&heap, 4096, (size_t)(a1 - a0)))
			return -ENOMEM;
		buf = heap;
	}
	pthread_mutex_lock(rmw_lock);
	err = ftl_set_read(f, buf, a0, (size_t)(a1 - a0));
	if (!err) {
		if (data)
			memcpy((char *)buf + (o - a0), data, size);
		else
			memset((char *)buf + (o - a0), 0, size);
		err = ftl_set_write(f, buf, a0, (size_t)(a1 - a0), flags);
	}
	pthread_mutex_unlock(rmw_lock);
	free(heap);
	return err;
}

int fe_byteio_zero(struct ftl_set *f, pthread_mutex_t *rmw_lock, void *buf,
		   size_t buflen, uint64_t o, uint64_t len, bool punch,
		   unsigned flags)
{
	uint64_t end = o + len, a0 = SECT_UP(o), a1 = SECT_DOWN(end);
	int err = 0;

	if (a0 >= a1)   /* inside one sector, or two partial ones */
		return fe_byteio_rmw(f, rmw_lock, buf, buflen, NULL, o,
				     (size_t)len, flags);
	if (o < a0)
		err = fe_byteio_rmw(f, rmw_lock, buf, buflen, NULL, o,
				    (size_t)(a0 - o), flags);
	if (!err)
		err = punch ? ftl_set_discard(f, a0, a1 - a0)
			    : ftl_set_write_zeroes(f, a0, a1 - a0);
	if (!err && a1 < end)
		err = fe_byteio_rmw(f, rmw_lock, buf, buflen, NULL, a1,
				    (size_t)(end - a1), flags);
	return err;
}
