/* SPDX-License-Identifier: MIT */
/*
 * alignpart internals.  Every non-static function is prefixed ap_.
 *
 * Error convention inside alignpart: functions return 0 on success or a
 * positive exit code (AP_EXIT_*) after printing exactly one
 * "alignpart: ..." line on stderr (ap_fail()).  libalign / libfdisk /
 * libblkid negative errno values are turned into such a line where they are
 * called.
 */
#ifndef OCTANT_ALIGNPART_H
#define OCTANT_ALIGNPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "align.h"
#include "oct-exit.h"

/* alignpart's names for the shared table (common/oct-exit.h, docs/alignpart.8).
 * A safety refusal was 4 until 0.1.0's plumbing change; it is ublk-flash's 5 now
 * (4 means a corrupt image in both tools). */
#define AP_EXIT_OK         OCT_EXIT_OK       /* success; check: every partition aligned */
#define AP_EXIT_MISALIGNED OCT_EXIT_FINDING  /* check: some partition not physically aligned */
#define AP_EXIT_USAGE      OCT_EXIT_USAGE    /* bad option, bad size, impossible layout */
#define AP_EXIT_IO         OCT_EXIT_IO       /* cannot open / probe / read / write */
#define AP_EXIT_REFUSED    OCT_EXIT_BUSY     /* safety refusal: in use, existing data */
#define AP_EXIT_ZONED      OCT_EXIT_UNSUPPORTED /* a host-managed zoned disk or zoned
                                                   image: Linux allows no partitions on it */

#define AP_MAX_PARTS 128

enum ap_cmd { AP_CMD_NONE = 0, AP_CMD_CHECK, AP_CMD_CREATE, AP_CMD_SUGGEST,
	      AP_CMD_PREDICT, AP_CMD_CONVERT };

/* One partition asked for (--part SIZE[:TYPE] or a script line). */
struct ap_req {
	uint64_t size;        /* sectors; 0 with rest = remainder */
	bool rest;            /* takes what is left */
	bool has_start;       /* script gave start= */
	uint64_t start;       /* LBA, when has_start */
	char *type;           /* type string as given, or NULL (default) */
	char *name;           /* GPT name from a script, or NULL */
	char *size_str;       /* size as given, for reports (--part only) */
};

/* Parsed command line. */
struct ap_opts {
	enum ap_cmd cmd;
	const char *target;
	const char *label;        /* "gpt" / "dos" */
	const char *profile;      /* profile name, NULL = auto */
	const char *topology;     /* LOG/PHYS[/OFFSET] */
	const char *script;       /* file name or "-" */
	const char *part_spec[AP_MAX_PARTS];
	size_t nparts;
	uint64_t start;
	bool have_start;
	bool json, no_act, force;
	uint64_t to_sector;       /* convert --to: target sector size, bytes */
	uint64_t from_sector;     /* convert --from (0: as the source says) */
	/* table output, as lsblk's: -o COLS, -n, -r, -b */
	const char *columns;      /* comma list of column names, or NULL */
	bool noheadings, raw, bytes;
};

/* A table column: @name is the readable heading (upper-cased) and what -o
 * takes, @json the JSON key (NULL: @name), with a unit when it holds one
 * ("start_sector", "size_bytes"). */
struct ap_col {
	const char *name;
	const char *json;
	int jtype;                /* SCOLS_JSON_* */
	bool right;
	bool hidden;              /* readable output: shown only when -o names it */
};

/* The resolved topology and where it came from. */
struct ap_topo {
	struct align_topology t;
	const struct align_profile *profile;
	bool profile_named;       /* --profile given (and not "auto") */
	bool is_blockdev;
	bool is_image;            /* an octant flash image */
	uint64_t nsectors;        /* target size in logical sectors */
	uint64_t grain;           /* partition grain, bytes */
	char desc[160];           /* align_topology_describe() */
	char served_image[4096];  /* image of a device ublk-flash serves, or "" */
};

/* One partition as planned / found. */
struct ap_part {
	size_t partno;            /* 1-based */
	uint64_t start, size;     /* LBAs / sectors */
	uint64_t wanted;          /* start asked for (moved when != start) */
	bool moved, forced;
	bool container;           /* dos extended partition */
	const char *type;         /* as asked, NULL = default */
	const char *name;
	char type_name[64];       /* type as libfdisk names it */
};

/* cli.c */
int ap_parse_args(int argc, char **argv, struct ap_opts *o);
void ap_usage(FILE *out, enum ap_cmd cmd);

/* util (msg.c) */
int ap_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ap_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ap_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ap_cmd_fail(const char *cmd, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ap_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ap_human_size(uint64_t bytes, char *buf, size_t len);
#define AP_ESCAPED_LEN(n) ((n) * 4 + 1)  /* ap_escape of @n characters */
const char *ap_escape(const char *s, char *buf, size_t len);

/* topology.c */
int ap_topo_resolve(const struct ap_opts *o, struct ap_topo *tp);
const char *ap_source_name(enum align_source s);
struct ap_doc;
void ap_topo_doc_source(struct ap_doc *doc, const struct ap_topo *tp);

/* safety.c */
int ap_check_not_in_use(const char *path, bool is_blockdev);
int ap_probe_signatures(const char *path, char *what, size_t len);
int ap_wipe_leftovers(int fd, const struct ap_topo *tp, const char *label);

/* plan.c */
int ap_plan(const struct ap_topo *tp, const struct ap_opts *o,
	    struct ap_req *reqs, size_t nreq, uint64_t first_usable,
	    uint64_t last_usable, struct ap_part *parts);
int ap_parse_part_spec(const char *spec, const struct ap_topo *tp,
		       struct ap_req *r);
void ap_free_reqs(struct ap_req *reqs, size_t n);

/* fdisk_io.c */
struct fdisk_context;
int ap_fdisk_open(const struct ap_topo *tp, const char *path, int fd,
		  bool readonly, struct fdisk_context **cxtp);
void ap_fdisk_close(struct fdisk_context *cxt);
int ap_fdisk_new_label(struct fdisk_context *cxt, const char *label,
		       uint64_t first_lba);
int ap_fdisk_usable(const struct ap_topo *tp, const char *label,
		    uint64_t *first, uint64_t *last);
int ap_fdisk_add(struct fdisk_context *cxt, struct ap_part *p);
int ap_fdisk_read(struct fdisk_context *cxt, struct ap_part *parts,
		  size_t *n, const char **label);

/* script.c */
int ap_read_script(struct fdisk_context *cxt, const char *file,
		   struct ap_req *reqs, size_t *nreq, char *label, size_t len);

/* convert.c */
int ap_convert_dump(char *in, uint64_t from, uint64_t to, char **out);

/* output.c */
struct libscols_table;
struct ap_doc;
struct ap_doc *ap_doc_new(const struct ap_opts *o);
void ap_doc_kv(struct ap_doc *d, const char *key, int jtype,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int ap_doc_end_record(struct ap_doc *d, const char *name);
int ap_doc_table(struct ap_doc *d, struct libscols_table *tb);
int ap_doc_print(struct ap_doc *d);
void ap_doc_free(struct ap_doc *d);
struct libscols_table *ap_table_new(struct ap_doc *d, const char *name);
int ap_cols_check(const struct ap_opts *o, const struct ap_col *cols, size_t n);
int ap_table_cols(struct ap_doc *d, struct libscols_table *tb,
		  const struct ap_col *cols, size_t n);
const char *ap_doc_size(const struct ap_doc *d, uint64_t bytes, char *buf,
			size_t len);
int ap_table_row(struct ap_doc *d, struct libscols_table *tb,
		 const char *const *cells);

/* commands */
int ap_cmd_check(const struct ap_opts *o);
int ap_cmd_create(const struct ap_opts *o);
int ap_cmd_suggest(const struct ap_opts *o);
int ap_cmd_predict(const struct ap_opts *o);
int ap_cmd_convert(const struct ap_opts *o);

#endif /* OCTANT_ALIGNPART_H */
