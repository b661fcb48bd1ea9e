/* SPDX-License-Identifier: MIT */
/* ublk frontend: placeholder until the ublk issue lands. */
#include <errno.h>
#include <stdio.h>

#include "frontend.h"

static int ublk_probe(char *why, size_t len)
{
	snprintf(why, len, "the ublk frontend is not built yet; use --frontend fuse");
	return -ENOTSUP;
}

static int ublk_start(struct fe_server *s)
{
	(void)s;
	return -ENOTSUP;
}

static int ublk_run(struct fe_server *s)
{
	(void)s;
	return -ENOTSUP;
}

static void ublk_stop(struct fe_server *s)
{
	(void)s;
}

const struct fe_ops fe_ublk_ops = {
	.name  = "ublk",
	.probe = ublk_probe,
	.start = ublk_start,
	.run   = ublk_run,
	.stop  = ublk_stop,
};
