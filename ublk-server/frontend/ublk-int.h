/* SPDX-License-Identifier: MIT */
/*
 * ublk frontend internals, shared by ublk.c (the ops table and the device
 * lifecycle), ublk-ctrl.c (control commands on /dev/ublk-control) and
 * ublk-queue.c (one thread + one io_uring per hardware queue).
 * Prefixes: ublk_ctrl_ (control), ublk_q_ (queues).
 */
#ifndef OCTANT_UBLK_INT_H
#define OCTANT_UBLK_INT_H

#include <liburing.h>
#include <linux/ublk_cmd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "ftl-set.h"

/* ---- what Linux 6.1's uapi header lacks (values from newer kernels) ---- */
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE (1ULL << 6)
#endif
#ifndef UBLK_CMD_GET_FEATURES
#define UBLK_CMD_GET_FEATURES 0x13
#endif
/* QUIESCE_DEV (Linux 6.16, UBLK_F_QUIESCE): the uapi names only its ioctl
 * encoding (UBLK_U_CMD_QUIESCE_DEV); this is its number. */
#define UBLK_CMD_QUIESCE_DEV 0x16
/* UPDATE_SIZE (Linux 6.14, UBLK_F_UPDATE_SIZE): the same. */
#define UBLK_CMD_UPDATE_SIZE 0x15
/* ioctl-encoded command opcodes (newer kernels); the legacy opcodes are the
 * low byte.  Defined here under our own names so both headers work. */
#define UBLK_IOC_R(nr)  _IOR('u', nr, struct ublksrv_ctrl_cmd)
#define UBLK_IOC_RW(nr) _IOWR('u', nr, struct ublksrv_ctrl_cmd)
#define UBLK_IOC_IO(nr) _IOWR('u', nr, struct ublksrv_io_cmd)

/* The kernel whose uapi header the build used (ublk-server/module.mk). */
#ifndef OCTANT_UBLK_UAPI
#define OCTANT_UBLK_UAPI "unknown"
#endif

/* Every feature flag, the kernel that brought it and whether ADD_DEV asks
 * for it: one table (ublk-features.h). */
#include "ublk-features.h"
/* UBLK_FEAT(NAME): the flag's bit by the table, so code using a flag the
 * host's 6.1 header lacks builds with it too (make UBLK_UAPI=host). */
enum {
#define X(name, bit, since, want) UBLK_FEAT_BIT_##name = (bit),
	UBLK_FEATURES(X)
#undef X
};
#define UBLK_FEAT(name) (1ULL << UBLK_FEAT_BIT_##name)

/* dev_info.ublksrv_flags ("for ublksrv internal use"): our tag in the top
 * 16 bits, a hash of the image's identity below, so `serve --recover`
 * finds the device a dead server of the same image left. */
#define UBLK_TAG_MAGIC   0x0C7AULL
#define UBLK_TAG(h)      ((UBLK_TAG_MAGIC << 48) | ((h) & 0xffffffffffffULL))

/* ---- control (ublk-ctrl.c) ---- */
struct ublk_ctrl {
	struct io_uring ring;
	int fd;                  /* /dev/ublk-control */
	bool ring_ok;
	bool ioctl_encode;       /* send UBLK_U_CMD_* instead of UBLK_CMD_* */
	bool have_get_features;  /* GET_FEATURES answered */
	uint64_t features;       /* what the driver supports: GET_FEATURES'
	                            mask, else the table's rows <= 6.1 */
	uint64_t seq;            /* user_data of the next command */
	bool lost;               /* a command timed out: the ring is unusable
	                            and this struct must never be freed */
	union {                  /* the kernel's view of a command's buffer */
		struct ublksrv_ctrl_dev_info info;
		struct ublk_params params;
		uint64_t features;
	} buf;
};

/* Open /dev/ublk-control, set up a 128-byte-SQE ring, probe features. */
int ublk_ctrl_open(struct ublk_ctrl *c);
/* The flags ADD_DEV asks for: every feature ublk-features.h wants that the
 * driver offers (c->features); never one it does not.  Without zero copy
 * (AUTO_BUF_REG) when the environment turns it off for an A/B:
 * OCTANT_UBLK_ZC=0 or OCTANT_UBLK_DAEMONS=queue (docs/ublk.md).  With zero
 * copy, also USER_COPY where offered (short requests move by user copy:
 * ublk-daemon.c), unless OCTANT_UBLK_ZC_UCOPY=0. */
uint64_t ublk_ctrl_add_flags(const struct ublk_ctrl *c);
/* The table's name of feature bit @bit ("QUIESCE"), or NULL. */
const char *ublk_feature_name(unsigned bit);
void ublk_ctrl_close(struct ublk_ctrl *c);
/* ADD_DEV: in/out @info (dev_id UINT32_MAX = any); fails after @timeout_ms. */
int ublk_ctrl_add_dev(struct ublk_ctrl *c, struct ublksrv_ctrl_dev_info *info,
		      unsigned timeout_ms);
int ublk_ctrl_del_dev(struct ublk_ctrl *c, uint32_t id, unsigned timeout_ms);
int ublk_ctrl_get_info(struct ublk_ctrl *c, uint32_t id,
		       struct ublksrv_ctrl_dev_info *info);
int ublk_ctrl_set_params(struct ublk_ctrl *c, uint32_t id,
			 struct ublk_params *p);
int ublk_ctrl_get_params(struct ublk_ctrl *c, uint32_t id,
			 struct ublk_params *p);
/* START_DEV returns once every queue has fetched and the disk is added. */
int ublk_ctrl_start_dev(struct ublk_ctrl *c, uint32_t id, int pid,
			unsigned timeout_ms);
int ublk_ctrl_stop_dev(struct ublk_ctrl *c, uint32_t id, unsigned timeout_ms);
int ublk_ctrl_start_recovery(struct ublk_ctrl *c, uint32_t id);
int ublk_ctrl_end_recovery(struct ublk_ctrl *c, uint32_t id, int pid,
			   unsigned timeout_ms);
/* QUIESCE_DEV (a device with UBLK_F_QUIESCE): the driver requeues every new
 * request (they wait in the kernel), waits up to @timeout_ms until every
 * queue has an idle fetch, then answers the idle fetches
 * UBLK_IO_RES_ABORT; requests the server holds are still committed as
 * usual.  The device stays LIVE until the server closes /dev/ublkcN, then
 * it is QUIESCED and waits for START/END_USER_RECOVERY.  -EBUSY: the
 * queues did not idle in time (the driver keeps requeueing new requests:
 * ask again); -EOPNOTSUPP: the device lacks UBLK_F_QUIESCE. */
int ublk_ctrl_quiesce_dev(struct ublk_ctrl *c, uint32_t id,
			  unsigned timeout_ms);
/* UPDATE_SIZE: the device's capacity becomes @sectors (512 bytes each;
 * the driver takes any size, at any time its disk exists). */
int ublk_ctrl_update_size(struct ublk_ctrl *c, uint32_t id, uint64_t sectors);

/* ---- queues (ublk-queue.c, ublk-daemon.c) ---- */
struct ublk_dev;
struct ublk_queue;

/* A per-I/O daemon (ublk-daemon.c; the driver's UBLK_F_PER_IO_DAEMON): one
 * thread and one io_uring that fetch tags idx, idx + n, ... of a queue (n
 * daemons), run each request on the engine and commit it themselves: no
 * hand-off between threads.  With zero copy (UBLK_F_AUTO_BUF_REG) the
 * driver registers each request's pages in the daemon's ring, and the
 * daemon moves the data between them and the tag's buffer with io_uring
 * READ_FIXED / WRITE_FIXED of the memfd that holds the buffers. */
struct ublk_daemon {
	struct ublk_queue *q;
	unsigned idx;
	struct io_uring ring;
	bool ring_ok;
	pthread_t thread;
	bool thread_ok;
	unsigned inflight;             /* commands and copies queued */
	unsigned copies;               /* of which zero-copy copies */
	bool draining;                 /* a fetch aborted by QUIESCE_DEV */
	bool armed, fetched, ended;    /* under q->wlock */
	int err;                       /* under q->wlock */
};

/* NEW -> ARMED (ring and workers up, nothing asked of the driver yet) ->
 * READY (every tag fetched) -> DONE; FAILED from any of them. */
enum ublk_q_state { UBLK_Q_NEW = 0, UBLK_Q_READY, UBLK_Q_FAILED, UBLK_Q_DONE,
		    UBLK_Q_ARMED };

/* Engine worker threads per queue.  Two: while one waits for the engine's
 * lock (a short write, GC) or computes a run's CRCs, the other runs the
 * next request, also when one fio job sends everything to one queue
 * (bench-vm, same guest, against one worker: full-device 4K randwrite
 * 1.15x with one queue and 1.28x with two, fresh 1.24x with two, 1M write
 * 1.08x).  Order: a FLUSH covers only writes already answered, which two
 * workers keep (ublk-queue.c). */
#define UBLK_Q_WORKERS 2

struct ublk_queue {
	struct ublk_dev *dev;
	unsigned id, depth;
	struct io_uring ring;
	bool ring_ok;
	struct ublksrv_io_desc *iods;  /* mmap of the driver's descriptors */
	size_t iods_len;
	unsigned char *bufs;           /* depth * buf_size, one per tag */
	pthread_t thread;
	bool thread_ok;
	enum ublk_q_state state;       /* under dev->lock */
	int err;                       /* why it failed / ended */
	unsigned inflight;             /* fetch/commit commands queued */
	bool draining;                 /* a fetch aborted by QUIESCE_DEV: end
	                                  once the workers hold no tag and
	                                  the answers are submitted, leaving
	                                  the re-armed fetches to the ring's
	                                  exit (ring thread) */
	uint64_t ios;                  /* requests served */
	unsigned inside;               /* atomic: requests of this queue in
	                                  the engine (ublk_q_handle); an
	                                  online resize waits for 0 in each
	                                  (per queue: no line shared between
	                                  queues per request) */
	/* Writes that could wait (ftl_write_try said -EAGAIN), flush,
	 * discard and write-zeroes run in the queue's workers, never in the
	 * ring thread, so a slow backing write does not stop the ring taking
	 * requests and committing the answers of others; reads (lock-free on
	 * the engine) and writes that cannot wait the ring thread serves
	 * itself (ublk-queue.c). */
	unsigned busy;                 /* tags with the workers (ring thread) */
	unsigned *inl;                 /* this batch's reads and writes to
	                                  try inline (ring thread) */
	int efd;                       /* eventfd: "answers are ready" */
	uint64_t efd_val;              /* its read buffer */
	bool efd_armed;                /* a read of it is queued on the ring */
	uint64_t *zlba;                /* zoned: per tag, the sector a zone
	                                  append wrote (its commit's
	                                  zone_append_lba), else 0 */
	pthread_t workers[UBLK_Q_WORKERS];
	unsigned nworkers;             /* started */
	pthread_mutex_t wlock;         /* guards everything below */
	pthread_cond_t wcond;          /* work queued, or stop */
	bool wlock_ok, wstop;
	unsigned *todo;                /* fetched tags, a ring of depth */
	unsigned todo_head, todo_n;
	struct ublk_answer { unsigned tag; int res; } *done, *done_spare;
	unsigned done_n;               /* answers waiting for their commit */
	bool kicked;                   /* efd written since the last harvest */
	/* Per-I/O daemons (ublk-daemon.c), when the driver has them: the
	 * queue's thread is daemon 0 and runs the others; no ring thread,
	 * workers or eventfd then. */
	unsigned ndaemons;             /* 0: the ring thread and its workers */
	struct ublk_daemon *daemons;
	bool zc;                       /* zero copy (UBLK_F_AUTO_BUF_REG) */
	bool zc_ucopy;                 /* zc, and UBLK_F_USER_COPY: requests
	                                  up to UBLK_ZC_UCOPY_MAX bytes move
	                                  by pread/pwrite (ublk-daemon.c) */
	int zc_fd;                     /* the memfd of bufs, with zc; else -1 */
	bool dgo, dquit;               /* under wlock: daemons fetch / end */
};

struct ublk_dev {
	struct ublk_ctrl ctrl;
	struct ublksrv_ctrl_dev_info info;
	struct ftl_set *set;               /* the set, or NULL ... (atomic: an
	                                  online resize swaps it, held) */
	struct zn *zn;                 /* ... a zoned image (ublk-zoned.c):
	                                  UBLK_F_ZONED with USER_COPY */
	bool pi;                       /* an image with PI (ublk-integrity.c):
	                                  UBLK_F_INTEGRITY with USER_COPY */
	bool held;                     /* atomic: requests wait outside the
	                                  engine (an online resize) */
	int cdev_fd;                   /* /dev/ublkcN */
	uint32_t buf_size;             /* per-tag I/O buffer, = max_io_buf_bytes */
	bool io_ioctl;                 /* ioctl-encoded FETCH/COMMIT */
	bool added, started;
	bool read_only;                /* serve --read-only: UBLK_ATTR_READ_ONLY */
	struct ublk_queue *q;
	pthread_mutex_t lock;
	pthread_cond_t cond;           /* a queue changed state, or go/quit */
	bool go, quit;                 /* under lock: ARMED queues fetch / end */
	bool quiescing;                /* atomic: QUIESCE_DEV is sent, so an
	                                  aborted fetch means drain and end (a
	                                  live upgrade), not a stop */
	bool quiesced;                 /* QUIESCE_DEV succeeded: stop hands the
	                                  device over, never STOP_DEV */
	bool upgrade;                  /* serve --upgrade: the device is taken
	                                  over from a live server */
	int event_fd;                  /* written when a queue thread ends */
	int spare_fd;                  /* held from ublk_q_prepare until
	                                  /dev/ublkcN is opened in its place */
};

/* Everything queue @i needs that can fail for want of memory, threads or
 * descriptors, before the driver is asked anything that cannot be undone
 * (START_USER_RECOVERY): its buffers, its thread, ring and workers; the
 * thread then waits (ARMED) for ublk_q_fetch.  0, or -errno (FAILED). */
int ublk_q_prepare(struct ublk_dev *d, unsigned i);
/* Map queue @i's descriptors (d->cdev_fd open): 0 or -errno. */
int ublk_q_map(struct ublk_dev *d, unsigned i);
/* Let every ARMED queue fetch (@go) or end without touching the driver
 * (!@go), and wait until each has fetched every tag, or ended: 0 or the
 * first queue's -errno. */
int ublk_q_fetch(struct ublk_dev *d, bool go);
/* Wait for a queue thread to end (the device was stopped) and free it. */
void ublk_q_join(struct ublk_dev *d, unsigned i);

/* ---- ublk-io.c: one request, shared by ublk-queue.c and ublk-daemon.c ---- */
/* Queue a FETCH_REQ or COMMIT_AND_FETCH_REQ (@nr) for @tag on @ring. */
int ublk_q_prep(struct ublk_queue *q, struct io_uring *ring, unsigned nr,
		unsigned tag, int result);
/* Queue and submit FETCH_REQ for tags @first, @first + @step, ... of @q
 * on @ring: how many, or -errno (an error the driver reports at submit
 * included: it fails the queue). */
int ublk_q_fetch_tags(struct ublk_queue *q, struct io_uring *ring,
		      unsigned first, unsigned step);
/* Run request @tag on the engine with @buf as its data: bytes done or
 * -errno. */
int ublk_q_handle(struct ublk_queue *q, unsigned tag, void *buf);
/* Is request @tag a write ublk_q_try_write may serve (a plain WRITE: no
 * FUA, zones or PI)? */
bool ublk_q_write_plain(const struct ublk_queue *q, unsigned tag);
/* Serve WRITE @tag only if the engine can without waiting
 * (ftl_write_try): bytes done or -errno as ublk_q_handle; -EAGAIN when it
 * could wait (or the engine is held by an online resize): hand it to a
 * worker (ublk_q_handle). */
int ublk_q_try_write(struct ublk_queue *q, unsigned tag, void *buf);
/* User copy (UBLK_F_USER_COPY): move @len bytes between @buf and request
 * @tag on /dev/ublkcN (@in: request -> @buf); @flag is or-ed into the
 * position (UBLKSRV_IO_INTEGRITY_FLAG: its integrity buffer).  0 or
 * -errno. */
int ublk_q_ucopy(struct ublk_queue *q, unsigned tag, void *buf, size_t len,
		 bool in, uint64_t flag);
void ublk_q_set_state(struct ublk_queue *q, enum ublk_q_state st, int err);
void ublk_q_thread_setup(const char *fmt, unsigned a, unsigned b);
/* The tag's buffer (depth * buf_size from q->bufs). */
void *ublk_q_buf(const struct ublk_queue *q, unsigned tag);
/* ublk-daemon.c: how queue @q of @d is served (q->ndaemons, q->zc) and
 * its buffers (q->bufs; a memfd with zero copy): 0 or -errno. */
int ublk_daemons_setup(struct ublk_dev *d, struct ublk_queue *q);
/* The queue thread with daemons: daemon 0, which runs the others. */
void *ublk_daemons_run(struct ublk_queue *q);
/* Free what ublk_daemons_setup took (the buffers). */
void ublk_daemons_free(struct ublk_queue *q);

/* ---- images with protection information (ublk-integrity.c) ---- */
/* Read or write request @tag of an image with PI, through @buf (the tag's
 * buffer), data and tuples moved by user copy: the result for its commit. */
int ublk_pi_rw(struct ublk_queue *q, unsigned tag, void *buf);
/* Add the integrity parameters (T10-DIF type 1, 8 bytes per 512). */
void ublk_pi_params(struct ublk_params *p);
/* The flags ADD_DEV needs for it (INTEGRITY | USER_COPY; 0 when the uapi
 * header has no integrity). */
uint64_t ublk_pi_flags(void);

/* ---- zoned images (ublk-zoned.c) ---- */
struct zn;
/* Run zoned request @tag through @buf (the tag's buffer), the data moved
 * by user copy; *@lba the sector a zone append wrote.  Bytes or -errno. */
int ublk_zoned_handle(struct ublk_queue *q, unsigned tag, void *buf,
		      uint64_t *lba);
/* The zoned device's parameters (basic with the zone as chunk_sectors,
 * 4096-byte logical blocks; zoned with the image's limits). */
void ublk_zoned_params(struct ublk_dev *d, struct ublk_params *p);
/* The flags ADD_DEV needs for a zoned device (ZONED | USER_COPY; 0 when
 * built with a uapi header without them). */
uint64_t ublk_zoned_flags(void);

#endif
