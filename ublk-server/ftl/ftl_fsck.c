/* SPDX-License-Identifier: MIT */
/*
 * fsck: check an image without mounting it — superblock copies,
 * checkpoints, the map against the OOB and data CRCs, NAND-rule
 * invariants (erased free blocks, nothing programmed past a write
 * pointer).  Read-only unless @repair.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "ftl-int.h"
#include "oct-json.h"

struct fsck {
	FILE *log;            /* findings (memstream) */
	struct oct_json jlog; /* --json: the findings array's inside, in log */
	char *buf;
	size_t len;
	int problems, warnings, nfind;
	bool json;
	uint32_t *bad_lpn;    /* map entries to drop on repair */
	uint32_t nbad;
	int sb_bad;           /* bit per bad superblock copy */
	int sb_other;         /* ... of those, bit per copy that checks out
	                         alone: this image at another size (a resize
	                         cut short) */
	bool no_ckpt, dirty;
	bool bbt_bad;         /* bad-block table: no valid copy */
	bool bbt_ro;          /* ... read-only flag it does not justify */
	uint32_t nbbt, bb_limit; /* ... its bad blocks, what spares absorb */
	uint64_t gen, mapped;
};

static void finding(struct fsck *k, bool problem, const char *fmt, ...)
{
	va_list ap;
	char line[512];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (problem)
		k->problems++;
	else
		k->warnings++;
	if (k->json) {
		/* one object of the "findings" array (report() copies it) */
		oct_json_obj(&k->jlog, NULL);
		oct_json_bool(&k->jlog, "problem", problem);
		oct_json_str(&k->jlog, "what", line);
		oct_json_end(&k->jlog);
	} else {
		fprintf(k->log, "%s: %s\n", problem ? "PROBLEM" : "note", line);
	}
	k->nfind++;
}

static bool oob_zero(const uint8_t *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (o[i])
			return false;
	return true;
}

/* Map vs OOB and data, and per-block NAND invariants. */
static int check_blocks(struct ftl *f, struct fsck *k)
{
	const struct ftl_geom *g = &f->g;
	uint64_t total = (uint64_t)g->nblocks * g->ppb;
	uint8_t *seen = calloc(total / 8 + 1, 1);
	uint8_t *page = malloc(g->ps);
	int r = 0;

	k->bad_lpn = calloc(g->nlpn, sizeof(*k->bad_lpn));
	if (!seen || !page || !k->bad_lpn) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t l = 0; l < g->nlpn; l++) {
		uint32_t p = f->log.map[l], b;
		uint8_t oob[1024];
		const struct ftl_oob *o = (const struct ftl_oob *)oob;
		const char *why = NULL;

		if (p == FTL_UNMAPPED)
			continue;
		k->mapped++;
		if (p == FTL_DAMAGED) {
			finding(k, true, "logical page %u: flushed data lost to "
				"media damage (reads fail with EIO until it is "
				"rewritten; --repair unmaps it: zeroes)", l);
			k->bad_lpn[k->nbad++] = l;
			continue;
		}
		b = p / g->ppb;
		if (seen[p / 8] & (1 << (p % 8)))
			why = "shares its page with another logical page";
		seen[p / 8] |= (uint8_t)(1 << (p % 8));
		if (!why && (f->idx.state[b] == FTL_BLK_FREE ||
			     f->idx.state[b] == FTL_BLK_PENDING))
			why = "points into a free or erased block";
		if (!why && ((r = nand_read_oob(f->nand, p, oob)) ||
			     (r = nand_read(f->nand, p, 0, page, g->ps))))
			goto out;
		if (!why && (!ftl_oob_at(g, oob, p) || o->kind != FTL_OOB_DATA))
			why = "has no valid OOB record";
		if (!why && o->lpn != l)
			why = "OOB names another logical page";
		if (!why && oct_crc32c(0, page, g->ps) != o->data_crc)
			why = "data does not match its CRC";
		if (why) {
			finding(k, true, "logical page %u -> flash page %u: %s", l,
				p, why);
			k->bad_lpn[k->nbad++] = l;
		} else if (g->pi && !ftl_pi_page_ok(g, oob, page)) {
			/* the data is good (its CRC): it reads, only a damaged
			 * sector of it could not be named later */
			finding(k, false, "logical page %u -> flash page %u: its "
				"PI record (T10-DIF guards) does not check out", l,
				p);
		}
	}
	for (uint32_t b = g->ckpt_blocks; b < g->nblocks; b++) {
		uint32_t from = f->idx.state[b] == FTL_BLK_FREE ? 0 :
				f->idx.state[b] == FTL_BLK_OPEN ? nand_block_wp(f->nand, b) :
				g->ppb;
		if (from >= g->ppb || nand_block_oob_hole(f->nand, b))
			continue;
		r = nand_read_block_oob(f->nand, b, f->buf.oob);
		if (r)
			goto out;
		if (from >= g->ppb ||
		    oob_zero(f->buf.oob + (size_t)from * g->oob,
			     (size_t)(g->ppb - from) * g->oob))
			continue;
		if (f->idx.state[b] == FTL_BLK_FREE)
			finding(k, false, "free block %u holds stale pages left by "
				"a crash (erased before reuse)", b);
		else
			finding(k, !k->dirty, "block %u: %s past its write "
				"pointer %u%s", b, k->dirty ? "pages programmed" :
				"data", from, k->dirty ? " (left by the crash)" :
				" (the medium changed, or a NAND rule was broken; "
				"--repair closes the block)");
	}
out:
	free(seen);
	free(page);
	return r;
}

/* The bad-block table (ftl_badblock.c): its copies, what it holds. */
static int check_bbt(struct ftl *f, struct fsck *k)
{
	uint8_t area[OCT_SB_AREA];
	struct ftl_stats st = { 0 };
	struct nand_backing *b = nand_backing(f->nand);

	if (b->ops->pread(b, area, sizeof(area), 0))
		return -EIO;
	ftl_fmark_load(f, area);
	if (f->fmark.bad)
		finding(k, false, "%u flush mark cop%s in the superblock area "
			"do%s not check out (a flush cut by a crash, or "
			"damage)", f->fmark.bad, f->fmark.bad > 1 ? "ies" : "y",
			f->fmark.bad > 1 ? "" : "es");
	if (ftl_bbt_load(f, area)) {
		finding(k, true, "bad-block table: no valid copy (damaged; "
			"--repair rebuilds it from the checkpoint)");
		k->bbt_bad = true;
		return 0;
	}
	ftl_bb_stats(f, &st);
	if (st.bad_blocks_factory + st.bad_blocks_grown)
		finding(k, false, "%llu bad blocks (%llu factory, %llu grown); "
			"the spare area absorbs %llu",
			(unsigned long long)(st.bad_blocks_factory +
					     st.bad_blocks_grown),
			(unsigned long long)st.bad_blocks_factory,
			(unsigned long long)st.bad_blocks_grown,
			(unsigned long long)st.bad_block_limit);
	k->nbbt = f->bb.n;
	k->bb_limit = f->bb.limit;
	k->bbt_ro = ftl_bb_ro_unjustified(f);
	if (k->bbt_ro)
		finding(k, true, "bad-block table: read-only flag set with %u "
			"bad blocks, the spare area absorbs %u: not justified "
			"(a full backing taken for used-up spares); --repair "
			"clears it", f->bb.n, f->bb.limit);
	else if (st.read_only)
		finding(k, false, "spare blocks used up: the device is "
			"read-only (its data stays readable)");
	return 0;
}

/* Logical pages still held by retired blocks (moved away at the next
 * writes of a read-write open; readable unless the medium lost them). */
static int check_retired(struct ftl *f, struct fsck *k)
{
	uint8_t *bad = calloc(f->g.nblocks, 1);
	uint64_t n = 0;

	if (!bad)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->bb.n; i++)
		bad[f->bb.tab[i] & ~FTL_BBT_GROWN] = 1;
	for (uint32_t l = 0; l < f->g.nlpn; l++) {
		uint32_t p = f->log.map[l];

		n += p != FTL_UNMAPPED && p != FTL_DAMAGED && bad[p / f->g.ppb];
	}
	if (n)
		finding(k, false, "%llu logical pages are still in retired "
			"blocks (moved at the next writes)",
			(unsigned long long)n);
	free(bad);
	return 0;
}

/*
 * The medium @m: bytes of a parent backing (a window: *fd -1, its size
 * exact), or at @m->path: a file or block device (*fd open, read-write with
 * @rw, and flocked then; the backing over it) or a remote medium (a URI:
 * *fd -1, sized like a device; read-write, an RBD image's exclusive lock
 * is held by the backing).  -EBUSY: locked by another.
 */
struct medium {
	const char *path;            /* the image's path, or NULL: ... */
	struct nand_backing *parent; /* ... bytes [off, off + len) of this
	                                (a set's part; its holder locks) */
	uint64_t off, len;
};

static int medium_open(const struct medium *m, bool rw, int *fd,
		       struct nand_backing **b, uint64_t *size, bool *blkdev)
{
	const char *path = m->path;
	int r;

	*fd = -1;
	*b = NULL;
	if (m->parent) {
		*blkdev = false;
		*size = m->len;
		return nand_backing_window(m->parent, m->off, m->len, b);
	}
	if (nand_backing_is_uri(path)) {
		*blkdev = true;
		return nand_backing_uri(path, !rw, b, size);
	}
	*fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	r = 0;
	if (rw && flock(*fd, LOCK_EX | LOCK_NB))
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (!r)
		r = ftl_fd_size(*fd, size, blkdev);
	if (!r)
		r = nand_backing_fd(*fd, b);
	if (r) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

/* The engine on medium @m, opened with @o (lock_fd for a path). */
static int medium_engine(const struct medium *m, const struct ftl_open_opts *o,
			 struct ftl **f)
{
	struct nand_backing *w;
	int r;

	if (!m->parent)
		return ftl_open(m->path, o, f);
	r = nand_backing_window(m->parent, m->off, m->len, &w);
	if (r)
		return r;
	r = ftl_open_backing_sized(w, m->len, o, f);
	if (r)
		w->ops->destroy(w);
	return r;
}

/* The superblock area through @b: *load is the superblock's verdict;
 * *other (if not NULL) a bit per bad copy that checks out on its own as
 * the same image at another size (ftl_grow.c: cut between steps 4 and 5). */
static int medium_sb(struct nand_backing *b, uint64_t size, struct oct_sb *sb,
		     struct ftl_geom *g, int *bad, int *load, int *other)
{
	static const size_t where[2] = { 0, OCT_SB_COPY_OFFSET };
	uint8_t area[OCT_SB_AREA];
	size_t n = size < sizeof(area) ? (size_t)size : sizeof(area);
	struct ftl_geom tmp;
	int r;

	memset(area, 0, sizeof(area));
	r = b->ops->pread(b, area, n, 0);
	if (r)
		return r;
	*load = ftl_sb_load(area, n, sb, g, bad);
	for (int i = 0; other && !*load && i < 2; i++) {
		const struct oct_sb *c = (const struct oct_sb *)(area + where[i]);

		if ((*bad & (1 << i)) && ftl_sb_decode(c, &tmp) == 0 &&
		    !memcmp(c->uuid, sb->uuid, sizeof(c->uuid)) &&
		    c->logical_sectors != sb->logical_sectors)
			*other |= 1 << i;
	}
	return 0;
}

/* Load like a read-only mount; 0, or <0 when it cannot be checked. */
static int check(const struct medium *m, struct fsck *k)
{
	struct ftl_open_opts oo = { .readonly = true };
	struct nand_backing *b = NULL;
	struct nand_geom ng;
	struct oct_sb sb;
	struct ftl_geom g;
	struct ftl *f = NULL;
	uint64_t size;
	uint32_t flags = 0;
	bool blkdev, marker = false;
	int fd, r, load, bad = 0;

	r = medium_open(m, false, &fd, &b, &size, &blkdev);
	if (r)
		return r;
	r = medium_sb(b, size, &sb, &g, &k->sb_bad, &load, &k->sb_other);
	if (r)
		goto out;
	r = load;                       /* the superblock's verdict */
	for (int i = 0; i < 2; i++)
		if (!r && (k->sb_other & (1 << i)))
			finding(k, false, "superblock copy %d checks out but "
				"gives another size: a resize was cut short "
				"(copy %d is used; the next serve or fsck --repair "
				"rewrites copy %d)", i, !i, i);
		else if (k->sb_bad & (1 << i))
			finding(k, true, "superblock copy %d is damaged%s", i,
				r ? "" : " (the other copy is used)");
	if (r) {
		finding(k, true, r == -EPROTONOSUPPORT ? "image of another "
			"format version" : "no valid superblock");
		r = 0;
		goto out;
	}
	if (!ftl_geom_size_ok(&g, size, blkdev)) {
		finding(k, true, "image is %llu bytes, the superblock needs %llu "
			"(truncated or wrong size)", (unsigned long long)size,
			(unsigned long long)g.image_size);
		goto out;
	}
	ng = ftl_nand_geom(&g);
	r = ftl_alloc(&g, &f);
	if (!r)
		r = nand_create(b, &ng, &f->nand);
	if (r)
		goto out;
	b = NULL;
	f->sb = sb;
	f->o = oo;
	f->readonly = true;
	r = check_bbt(f, k);
	if (r)
		goto out;
	r = ftl_ckpt_find(f, &k->gen, &flags, &bad, NULL);
	if (r == -EBADMSG) {
		finding(k, true, "no valid checkpoint (ublk-flash serve --scan "
			"or fsck --repair rebuilds from the OOB)");
		k->no_ckpt = true;
		r = 0;
		goto out;
	}
	if (r)
		goto out;
	if (bad)
		finding(k, true, "%d damaged checkpoint%s (the newest valid one, "
			"generation %llu, is used)", bad, bad > 1 ? "s" : "",
			(unsigned long long)k->gen);
	if (flags & FTL_CKPT_CLEAN) {
		r = ftl_ckpt_marker_read(f, &marker);
		if (r)
			goto out;
	}
	if (marker && f->mnt.marker_bad)
		finding(k, true, "the mount marker of checkpoint %llu is "
			"damaged (taken as present: the open rolls forward)",
			(unsigned long long)k->gen);
	if (!(flags & FTL_CKPT_CLEAN) || marker || f->mnt.ckpt_fallback) {
		k->dirty = true;
		finding(k, false, "%s: the next open rolls forward from "
			"checkpoint %llu", f->mnt.ckpt_fallback ? "a checkpoint slot "
			"is damaged" : "not cleanly closed",
			(unsigned long long)k->gen);
		r = ftl_roll_forward(f, false);
		if (r)
			goto out;
	}
	if (f->mnt.ckpt_lost)
		finding(k, true, "a newer checkpoint than generation %llu was "
			"lost (its slot reads as never used, pages are "
			"numbered past what that one allows): the open rolls "
			"forward over everything since, but data trimmed or "
			"moved after it may read an older version",
			(unsigned long long)k->gen);
	if (f->mnt.rf_lost_unknown)
		finding(k, true, "%llu page%s written before the last recorded "
			"flush ha%s a damaged OOB record: %s logical page is "
			"unknown and may read an older version",
			(unsigned long long)f->mnt.rf_lost_unknown,
			f->mnt.rf_lost_unknown > 1 ? "s" : "",
			f->mnt.rf_lost_unknown > 1 ? "ve" : "s",
			f->mnt.rf_lost_unknown > 1 ? "their" : "its");
	if (f->mnt.rf_lost_trims)
		finding(k, true, "%llu trim record%s written before the last "
			"recorded flush damaged: discarded data may read back",
			(unsigned long long)f->mnt.rf_lost_trims,
			f->mnt.rf_lost_trims > 1 ? "s" : "");
	if (f->mnt.rf_unknown)
		finding(k, true, "%llu flushed page%s written since checkpoint "
			"%llu lost to media damage with %s logical page%s "
			"unknown (the flush mark counts more than the medium "
			"and its flush summaries hold): the open refuses; "
			"--repair accepts the loss (%s may read an older "
			"version)", (unsigned long long)f->mnt.rf_unknown,
			f->mnt.rf_unknown > 1 ? "s" : "",
			(unsigned long long)k->gen,
			f->mnt.rf_unknown > 1 ? "their" : "its",
			f->mnt.rf_unknown > 1 ? "s" : "",
			f->mnt.rf_unknown > 1 ? "they" : "it");
	if (f->mnt.rf_gens_lost)
		finding(k, true, "the %llu checkpoints after generation %llu "
			"lost to media damage (the flush mark names %llu): "
			"what was erased since may be needed; the open "
			"refuses; --repair accepts the loss (data may read an "
			"older version)", (unsigned long long)f->mnt.rf_gens_lost,
			(unsigned long long)k->gen,
			(unsigned long long)f->fmark.last.ckpt_gen);
	if (f->mnt.rf_sum_trims)
		finding(k, true, "%llu trim record%s written before the last "
			"recorded flush lost to media damage (restored from "
			"a flush summary)", (unsigned long long)f->mnt.rf_sum_trims,
			f->mnt.rf_sum_trims > 1 ? "s" : "");
	if (f->mnt.rf_lost_sums)
		finding(k, true, "%llu flush summar%s written before the last "
			"recorded flush damaged (damage to the pages %s lists "
			"may read an older version until the next checkpoint)",
			(unsigned long long)f->mnt.rf_lost_sums,
			f->mnt.rf_lost_sums > 1 ? "ies" : "y",
			f->mnt.rf_lost_sums > 1 ? "they" : "it");
	if (f->ctr.base.nand_violations)
		finding(k, true, "%llu NAND rule violations were counted",
			(unsigned long long)f->ctr.base.nand_violations);
	r = check_blocks(f, k);
	if (!r)
		r = check_retired(f, k);
out:
	if (f)
		ftl_free(f);
	if (b)
		b->ops->destroy(b);
	if (fd >= 0)
		close(fd);
	return r;
}

static void fsck_reset(struct fsck *k, bool json)
{
	free(k->bad_lpn);
	if (k->log)
		fclose(k->log);
	free(k->buf);
	memset(k, 0, sizeof(*k));
	k->json = json;
	k->log = open_memstream(&k->buf, &k->len);
	oct_json_init_list(&k->jlog, k->log);
}

/* Write the good superblock copy over both (a damaged one), durably. */
static int fix_sb(struct nand_backing *b, uint64_t size)
{
	struct oct_sb sb;
	struct ftl_geom g;
	int r, bad, load;

	r = medium_sb(b, size, &sb, &g, &bad, &load, NULL);
	if (!r)
		r = load;
	if (!r)
		r = b->ops->pwrite(b, &sb, sizeof(sb), 0);
	if (!r)
		r = b->ops->pwrite(b, &sb, sizeof(sb), OCT_SB_COPY_OFFSET);
	return r ? r : b->ops->sync(b);
}

/* Fix what check() found: superblock copy, dirty state, bad map entries,
 * missing checkpoints (scan).  Leaves a cleanly closed image. */
static int repair(const struct medium *m, struct fsck *k)
{
	struct ftl_open_opts o = { .scan = k->no_ckpt, .accept_loss = true };
	struct nand_backing *b;
	struct ftl *f;
	uint64_t size;
	bool blkdev;
	int fd, r;

	/* The engine's image lock (see ftl_open) is held over the raw fixes
	 * below, so nothing that serves the image sees them half done, and
	 * into the open, which takes it on this descriptor (lock_fd): it is
	 * never let go in between for a server to take.  A remote medium:
	 * the backing holds an RBD image's lock over the raw fixes, and the
	 * open takes it again (a server that came in between makes the open
	 * fail, -EBUSY, after fixes that are good for it too). */
	r = medium_open(m, true, &fd, &b, &size, &blkdev);
	if (r)
		return r;
	if (k->sb_bad && k->sb_bad != 3)
		r = fix_sb(b, size);
	if (!r && k->bbt_bad)
		r = ftl_bbt_reset(b);
	b->ops->destroy(b);
	if (fd == 0)            /* (0 is "none" to lock_fd: then the open locks) */
		close(fd);
	o.lock_fd = fd > 0 ? fd : 0;
	if (r) {
		if (fd > 0)
			close(fd);
		return r;
	}
	r = medium_engine(m, &o, &f);
	if (r) {
		if (fd > 0)
			close(fd);
		return r;
	}
	ftl_lock(&f->lock);
	r = ftl_bb_clear_ro(f);
	k->bbt_ro = r == 1;
	r = r < 0 ? r : 0;
	for (uint32_t i = 0; i < k->nbad; i++)
		ftl_map_unset(f, k->bad_lpn[i]);
	/* the close writes one more: then every slot holds a fresh one
	 * (none left damaged; a clean open writes only a mount marker) */
	for (int i = 0; !r && i < (int)FTL_CKPT_SLOTS - 1; i++) {
		ftl_ckpt_force_base(f);         /* a base, not a delta */
		r = ftl_ckpt_write(f, false);
	}
	ftl_ckpt_force_base(f);
	ftl_unlock(&f->lock);
	if (r)
		ftl_close(f);
	else
		r = ftl_close(f);
	if (fd > 0)
		close(fd);          /* after the close: the lock goes last */
	return r;
}

static void report(struct fsck *k, FILE *out, bool repaired)
{
	fflush(k->log);
	if (k->json) {
		struct oct_json j;
		oct_json_init(&j, out);
		oct_json_obj(&j, NULL);
		oct_json_bool(&j, "clean", !k->problems);
		oct_json_bool(&j, "repaired", repaired);
		oct_json_i64(&j, "problems", k->problems);
		oct_json_i64(&j, "notes", k->warnings);
		oct_json_u64(&j, "checkpoint_gen", k->gen);
		oct_json_u64(&j, "mapped_pages", k->mapped);
		oct_json_arr(&j, "findings");
		/* the findings, written by the list writer k->jlog */
		fputs(k->buf ? k->buf : "", out);
		oct_json_end(&j);
		oct_json_end(&j);
		return;
	}
	fputs(k->buf ? k->buf : "", out);
	fprintf(out, "%s: %d problem%s, %d note%s; checkpoint generation %llu, "
		"%llu mapped pages\n", k->problems ? "damaged" : "clean",
		k->problems, k->problems == 1 ? "" : "s", k->warnings,
		k->warnings == 1 ? "" : "s", (unsigned long long)k->gen,
		(unsigned long long)k->mapped);
}

/* Check medium @m (ftl_fsck): 0 clean, 1 repaired, 4 problems left. */
static int fsck_medium(const struct medium *m, bool fix, FILE *out, bool json)
{
	struct fsck k = { 0 };
	int r;

	fsck_reset(&k, json);
	r = check(m, &k);
	if (r || (!k.problems && !k.sb_other) || !fix) {
		if (!r)
			report(&k, out, false);
		r = r ? r : k.problems ? 4 : 0;
		free(k.bad_lpn);
		fclose(k.log);
		free(k.buf);
		return r;
	}
	if (!json)
		report(&k, out, false);
	r = repair(m, &k);
	if (!r && !json && k.bbt_ro)
		fprintf(out, "repaired: read-only flag of the bad-block table "
			"cleared (%u bad blocks, the spare area absorbs %u): "
			"the device takes writes again\n", k.nbbt, k.bb_limit);
	fsck_reset(&k, json);
	if (!r)
		r = check(m, &k);
	if (!r) {
		if (!json)
			fprintf(out, "after repair:\n");
		report(&k, out, true);
	}
	r = r ? r : k.problems ? 4 : 1;
	free(k.bad_lpn);
	fclose(k.log);
	free(k.buf);
	return r;
}

/* Check an image (see ftl.h): 0 clean, 1 repaired, 4 problems left. */
int ftl_fsck(const char *path, bool fix, FILE *out, bool json)
{
	struct medium m = { .path = path };

	return fsck_medium(&m, fix, out, json);
}

/* ftl_fsck of the image in bytes [off, off + len) of @b (ftl.h). */
int ftl_fsck_backing(struct nand_backing *b, uint64_t off, uint64_t len,
		     bool fix, FILE *out, bool json)
{
	struct medium m = { .parent = b, .off = off, .len = len };

	return fsck_medium(&m, fix, out, json);
}
