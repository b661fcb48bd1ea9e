/* SPDX-License-Identifier: MIT */
/*
 * log — where a server's messages go once its device is live (`serve --log
 * syslog|stderr|FILE`).  Until then they go to the caller's stderr (a start
 * that fails says why in one line where it was asked).  The default is
 * syslog for a daemon (so journald has it) and stderr in the foreground (a
 * systemd unit's stderr is the journal already); a daemon without a syslog
 * socket falls back to RUNDIR.log (removed after a clean stop).
 *
 * syslog: each line is one datagram "<PRI>ublk-flash[PID]: MSG" (facility
 * daemon; "warning:" lines LOG_WARNING, "note:" LOG_NOTICE, the start and
 * stop lines LOG_INFO, others LOG_ERR) to /dev/log, or to
 * $UBLK_FLASH_SYSLOG_SOCKET (tests).  FILE is appended to (created 0600).
 * Prefix serve_log_, 0 / -errno returns.
 */
#ifndef OCTANT_SERVE_LOG_H
#define OCTANT_SERVE_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum serve_log_kind { SERVE_LOG_DEFAULT = 0, SERVE_LOG_SYSLOG, SERVE_LOG_STDERR,
		      SERVE_LOG_FILE };

/* Parse a --log value: syslog, stderr, or a FILE path with a '/' in it (so
 * a mistyped "sylog" is an error, not a file; ./NAME for one here).
 * -EINVAL otherwise. */
int serve_log_parse(const char *arg, enum serve_log_kind *kind);

/* Before the server starts: check the target of --log @arg (@kind) and
 * open it (a FILE; the syslog socket's presence).  -ENOENT no syslog
 * socket; a FILE's open error.  One line in @why. */
int serve_log_open(enum serve_log_kind kind, const char *arg, char *why,
		   size_t len);

/* The device is live: send what follows to the log chosen (@daemon: the
 * process detached, so "default" means syslog, or @rundir.log without a
 * syslog socket; in the foreground stderr).  stdin/stdout go to /dev/null
 * when @daemon.  Logs @started ("IMG served on DEV") to a syslog or FILE
 * target.  Returns the kind in effect. */
enum serve_log_kind serve_log_start(bool daemon, const char *rundir,
				    const char *started);

/* The server did not start: remove a FILE serve_log_open created. */
void serve_log_abandon(void);

/* Log one informational line (start/stop) to a syslog or FILE target. */
void serve_log_info(const char *msg);

/* The syslog socket path ($UBLK_FLASH_SYSLOG_SOCKET or /dev/log). */
const char *serve_log_socket(void);

#endif
