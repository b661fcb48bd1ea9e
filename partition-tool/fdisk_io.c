/* SPDX-License-Identifier: MIT */
/*
 * Everything that touches libfdisk: opening a target with alignpart's own
 * sector size and a grain of one sector (so libfdisk never moves a start or
 * an end that libalign chose), creating a label, adding partitions at
 * explicit LBAs and reading a table back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libfdisk/libfdisk.h>

#include "ap.h"

#define GPT_ENTRIES_BYTES (128u * 128u)

static int ask_cb(struct fdisk_context *cxt, struct fdisk_ask *ask, void *data)
{
	const char *msg;

	(void)cxt;
	switch (fdisk_ask_get_type(ask)) {
	case FDISK_ASKTYPE_WARN:
	case FDISK_ASKTYPE_WARNX:
		msg = fdisk_ask_print_get_mesg(ask);
		if (msg)
			ap_warn("libfdisk: %s", msg);
		/* a disk grown under its GPT (ublk-flash resize, a larger
		 * LUN): say what moves the backup, that nothing here did */
		if (msg && strstr(msg, "backup GPT table is not on the end"))
			ap_note("the disk grew since its GPT was written: its "
				"backup header is not at the end, and the space "
				"after it is unusable until `sgdisk -e %s` (or "
				"parted's Fix) moves it there; alignment is "
				"unaffected, and this command wrote nothing",
				data ? (const char *)data : "DEV");
		return 0;
	case FDISK_ASKTYPE_INFO:
		return 0;
	default:
		return -EINVAL;     /* never answer questions: no dialogs */
	}
}

/*
 * Open @path (or the already open @fd when >= 0) in libfdisk with the
 * topology's sector size.  0 or AP_EXIT_IO.
 */
int ap_fdisk_open(const struct ap_topo *tp, const char *path, int fd,
		  bool readonly, struct fdisk_context **cxtp)
{
	struct fdisk_context *cxt = fdisk_new_context();
	int rc;

	*cxtp = NULL;
	if (!cxt)
		return ap_fail(AP_EXIT_IO, "out of memory");
	fdisk_set_ask(cxt, ask_cb, (void *)path);
	fdisk_disable_dialogs(cxt, 1);
	/* a block device knows its logical size; an image uses ours */
	if (!tp->is_blockdev)
		fdisk_save_user_sector_size(cxt, tp->t.physical, tp->t.logical);
	fdisk_save_user_grain(cxt, tp->t.logical);
	rc = fd >= 0 ? fdisk_assign_device_by_fd(cxt, fd, path, readonly)
		     : fdisk_assign_device(cxt, path, readonly);
	if (rc < 0) {
		fdisk_unref_context(cxt);
		return ap_fail(AP_EXIT_IO, "%s: libfdisk cannot open it: %s",
			       path, strerror(-rc));
	}
	if (fdisk_get_sector_size(cxt) != tp->t.logical) {
		fdisk_unref_context(cxt);
		return ap_fail(AP_EXIT_USAGE, "%s: libfdisk sees %lu-byte sectors, the topology says %u",
			       path, fdisk_get_sector_size(cxt), tp->t.logical);
	}
	*cxtp = cxt;
	return 0;
}

/* Close a context from ap_fdisk_open() (drops the script that
 * ap_fdisk_new_label() attached: it holds a reference to the context). */
void ap_fdisk_close(struct fdisk_context *cxt)
{
	if (!cxt)
		return;
	fdisk_set_script(cxt, NULL);
	fdisk_unref_context(cxt);
}

/*
 * The usable LBA range of a new @label table on the target: GPT keeps the
 * protective MBR, header and 16 KiB of entries at both ends; dos keeps LBA
 * 0 and addresses at most 2^32 sectors.
 */
int ap_fdisk_usable(const struct ap_topo *tp, const char *label,
		    uint64_t *first, uint64_t *last)
{
	uint64_t ls = tp->t.logical, n = tp->nsectors;

	if (!strcmp(label, "gpt")) {
		uint64_t es = (GPT_ENTRIES_BYTES + ls - 1) / ls;

		*first = 2 + es;
		*last = n >= 2 + es + 1 ? n - 2 - es : 0;
	} else {
		*first = 1;
		*last = n ? n - 1 : 0;
		if (*last > UINT32_MAX)
			*last = UINT32_MAX;
	}
	if (n < 2 || *last < *first)
		return ap_fail(AP_EXIT_USAGE,
			       "%s is too small for a %s partition table (%" PRIu64 " sectors)",
			       tp->desc, label, n);
	return 0;
}

/*
 * Create an empty @label table in memory.  For GPT the header's first usable
 * LBA becomes @first_lba (the first partition's start), through the script
 * header "first-lba" that libfdisk honours.  0 or AP_EXIT_*.
 */
int ap_fdisk_new_label(struct fdisk_context *cxt, const char *label,
		       uint64_t first_lba)
{
	struct fdisk_script *dp = fdisk_new_script(cxt);
	char num[32];
	int rc;

	if (!dp)
		return ap_fail(AP_EXIT_IO, "out of memory");
	snprintf(num, sizeof(num), "%" PRIu64, first_lba);
	rc = fdisk_script_set_header(dp, "label", label);
	if (!rc && !strcmp(label, "gpt"))
		rc = fdisk_script_set_header(dp, "first-lba", num);
	if (!rc)
		rc = fdisk_set_script(cxt, dp);
	fdisk_unref_script(dp);    /* the context holds its own reference */
	if (!rc)
		rc = fdisk_create_disklabel(cxt, label);
	if (rc < 0)
		return ap_fail(AP_EXIT_USAGE, "libfdisk cannot create a %s table: %s",
			       label, strerror(-rc));
	if (!strcmp(label, "dos"))
		fdisk_set_first_lba(cxt, 1);
	return 0;
}

/* An MBR type code: [0x]H or [0x]HH. */
static bool is_mbr_code(const char *s)
{
	size_t n;

	if (!strncasecmp(s, "0x", 2))
		s += 2;
	n = strlen(s);
	return (n == 1 || n == 2) && strspn(s, "0123456789abcdefABCDEF") == n;
}

/*
 * The libfdisk type of @p->type on label @lb, as sfdisk reads it: a code
 * (MBR hex / GPT GUID), a shortcut (L S H U R V, Ex), an alias (linux swap
 * home uefi raid lvm, extended) or a type name.  Never a position in
 * libfdisk's list (its "sequence numbers" change between versions: "83" on
 * GPT was the 83rd entry, Linux /usr verity).  An MBR code on GPT is
 * refused, as sfdisk does.  MBR has no home type: H / home means Linux (83)
 * there, where sfdisk would write the empty type 0.  0 or AP_EXIT_USAGE.
 */
static int parse_type(struct fdisk_label *lb, const struct ap_part *p,
		      struct fdisk_parttype **type)
{
	const char *name = fdisk_label_get_name(lb), *s = p->type;
	bool gpt = !strcmp(name, "gpt");

	if (gpt && is_mbr_code(s))
		return ap_fail(AP_EXIT_USAGE,
			       "partition %zu: '%s' is an MBR type code; a gpt type is a GUID, a "
			       "shortcut (L linux, S swap, H home, U uefi, R raid, V lvm) or a type name",
			       p->partno, s);
	if (!gpt && (!strcmp(s, "H") || !strcasecmp(s, "home")))
		s = "83";
	*type = fdisk_label_advparse_parttype(lb, s,
			FDISK_PARTTYPE_PARSE_DATA | FDISK_PARTTYPE_PARSE_SHORTCUT |
			FDISK_PARTTYPE_PARSE_ALIAS | FDISK_PARTTYPE_PARSE_NAME |
			FDISK_PARTTYPE_PARSE_NOUNKNOWN);
	if (!*type)
		return ap_fail(AP_EXIT_USAGE,
			       "partition %zu: unknown %s partition type '%s' (want %s, a "
			       "shortcut L S H U R V, or a type name)", p->partno, name,
			       p->type, gpt ? "a GUID" : "a hex code");
	return 0;
}

/* Add partition @p at exactly its planned start and size; verify libfdisk
 * kept both.  0 or AP_EXIT_*. */
int ap_fdisk_add(struct fdisk_context *cxt, struct ap_part *p)
{
	struct fdisk_partition *pa = fdisk_new_partition(), *got = NULL;
	struct fdisk_parttype *type = NULL;
	struct fdisk_label *lb = fdisk_get_label(cxt, NULL);
	size_t partno = p->partno - 1;
	int rc, ret = 0;

	if (!pa)
		return ap_fail(AP_EXIT_IO, "out of memory");
	fdisk_partition_set_start(pa, p->start);
	fdisk_partition_set_size(pa, p->size);
	fdisk_partition_size_explicit(pa, 1);
	fdisk_partition_set_partno(pa, partno);
	if (p->type) {
		ret = parse_type(lb, p, &type);
		if (ret)
			goto out;
		fdisk_partition_set_type(pa, type);
	}
	if (p->name && fdisk_is_label(cxt, GPT))
		fdisk_partition_set_name(pa, p->name);
	rc = fdisk_add_partition(cxt, pa, &partno);
	if (rc < 0) {
		ret = ap_fail(AP_EXIT_USAGE, "partition %zu (LBA %" PRIu64 ", %" PRIu64 " sectors): libfdisk refused it: %s",
			      p->partno, p->start, p->size, strerror(-rc));
		goto out;
	}
	rc = fdisk_get_partition(cxt, partno, &got);
	if (rc < 0 || fdisk_partition_get_start(got) != p->start ||
	    fdisk_partition_get_size(got) != p->size) {
		ret = ap_fail(AP_EXIT_IO, "partition %zu: libfdisk did not keep start %" PRIu64 " size %" PRIu64,
			      p->partno, p->start, p->size);
		goto out;
	}
	snprintf(p->type_name, sizeof(p->type_name), "%s",
		 fdisk_partition_get_type(got) && fdisk_parttype_get_name(fdisk_partition_get_type(got))
		 ? fdisk_parttype_get_name(fdisk_partition_get_type(got)) : "?");
out:
	fdisk_unref_parttype(type);
	fdisk_unref_partition(got);
	fdisk_unref_partition(pa);
	return ret;
}

/*
 * Read the table of an opened target into @parts (at most AP_MAX_PARTS,
 * containers flagged).
 * 0, or AP_EXIT_IO when there is no table.
 */
int ap_fdisk_read(struct fdisk_context *cxt, struct ap_part *parts,
		  size_t *n, const char **label)
{
	struct fdisk_table *tb = NULL;
	struct fdisk_iter *itr = NULL;
	struct fdisk_partition *pa;
	int rc, ret = 0;

	*n = 0;
	if (!fdisk_has_label(cxt))
		return ap_fail(AP_EXIT_IO, "no partition table found (libfdisk knows none on it)");
	*label = fdisk_label_get_name(fdisk_get_label(cxt, NULL));
	rc = fdisk_get_partitions(cxt, &tb);
	itr = fdisk_new_iter(FDISK_ITER_FORWARD);
	if (rc < 0 || !itr) {
		ret = ap_fail(AP_EXIT_IO, "cannot read the partitions: %s",
			      strerror(rc < 0 ? -rc : ENOMEM));
		goto out;
	}
	while (*n < AP_MAX_PARTS && fdisk_table_next_partition(tb, itr, &pa) == 0) {
		struct ap_part *p = &parts[*n];
		struct fdisk_parttype *t;

		if (!fdisk_partition_is_used(pa) || !fdisk_partition_has_start(pa))
			continue;
		memset(p, 0, sizeof(*p));
		p->partno = fdisk_partition_get_partno(pa) + 1;
		p->start = p->wanted = fdisk_partition_get_start(pa);
		p->size = fdisk_partition_get_size(pa);
		t = fdisk_partition_get_type(pa);
		p->container = fdisk_partition_is_container(pa);
		snprintf(p->type_name, sizeof(p->type_name), "%s",
			 t && fdisk_parttype_get_name(t) ? fdisk_parttype_get_name(t) : "?");
		(*n)++;
	}
out:
	fdisk_free_iter(itr);
	fdisk_unref_table(tb);
	return ret;
}
