/* tty.h - a job's terminal, held by its supervisor (tessel-shim --tty; docs/terminal.md).
 *
 * The shim owns the PTY's master side for the job's whole life, so that the job outlives any
 * client and any restart of tesseld, and a person can detach and attach again.  The job gets
 * the slave side as its controlling terminal and its stdin, stdout and stderr.  tesseld
 * reaches the terminal through a Unix SOCK_SEQPACKET socket that the shim listens on in the
 * job's state directory (root's, tesseld's: no user can connect), one term.h message per
 * datagram, one client at a time (the newest; the one before gets a NOTICE and is closed).
 *
 *   shim                                       tesseld (root)          client
 *   ----                                       --------------          ------
 *   tagent_tty_open: PTY, STATE/tty.sock
 *   the job: setsid, TIOCSCTTY, stdio = slave
 *   loop: PTY output -> stdout log + ring  <--  connect (uid checked)  <-- WebSocket
 *         ring -> client ('o')                 relays ('i','r' checked) <-> messages
 *         client 'i' -> PTY, 'r' -> TIOCSWINSZ
 *   job ended: drain, flush, 'x' "exit N", close, unlink the socket
 *
 * Exec (tessel exec JOB -- CMD): a connection whose first message is EXEC gets a new process
 * in the job, started by the shim's exec function (shim.c: the job's cgroups, mount namespace,
 * account, groups, environment, LD_PRELOAD and cwd), on a pseudo-terminal of its own; the
 * connection carries that terminal's messages and, at the process's end, its EXIT.  At most
 * TAGENT_EXEC_MAX at once.  The socket exists for every job with a state directory (a job
 * without a terminal is refused ATTACH, not EXEC).
 *
 * Flow: everything the job writes goes to its stdout log at once, and into a ring of the
 * last TAGENT_TTY_RING bytes not yet sent to a client.  With a client attached, a full ring
 * stops the reading of the PTY (the job waits, as on any terminal: nothing is lost); with
 * none, the oldest bytes of the ring give way, are counted, and the next client is told how
 * many were not shown (they are in the log).  Typed input waits in the shim when the job does
 * not read it (the PTY's input queue is full), and the client's socket is not read meanwhile.
 */
#ifndef TESSEL_AGENT_TTY_H
#define TESSEL_AGENT_TTY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/logcap.h"
#include "libutil/error.h"

/* Bytes of output kept for a client (what a job wrote while nobody was attached, shown at the
 * next attach): a screenful of a full-screen program is ~10 KiB with its escapes, a shell's
 * prompt and the last lines of a training script's progress much less; 64 KiB replays that
 * without flooding a person with a long detached run (the whole is in the log). */
#define TAGENT_TTY_RING (64u << 10)

/* The ring: bytes not yet sent to a client, the oldest first.  Pure (no I/O), unit-tested. */
typedef struct {
    uint8_t buf[TAGENT_TTY_RING];
    size_t len;
    uint64_t lost; /* bytes dropped (oldest first) since the last client took the ring */
} tagent_ring_t;

/* Append n bytes; with drop, the oldest give way when there is no room (counted in lost);
 * without, only what fits is taken.  Returns the bytes taken. */
size_t tagent_ring_put(tagent_ring_t *r, const void *p, size_t n, bool drop);
/* Remove the first n bytes (n <= len). */
void tagent_ring_consume(tagent_ring_t *r, size_t n);
/* Room left. */
size_t tagent_ring_room(const tagent_ring_t *r);

typedef struct tagent_tty tagent_tty_t;

/* Processes started in the job at once by EXEC, at most: each holds a terminal and a slot of
 * the shim's poll set. */
#define TAGENT_EXEC_MAX 8

/* Start argv in the job with pts (a terminal's slave side, close-on-exec) as its controlling
 * terminal and stdin, stdout, stderr.  Its pid, or -1 with why (one line). */
typedef pid_t (*tagent_exec_fn)(void *arg, char **argv, int pts, char *why, size_t wlen);

/* Listen on sock_path (mode 0600, the shim's own; an old socket there is replaced); with pty,
 * make the job's terminal too (window 24x80; the slave owned by uid:gid, mode 0620, when
 * uid >= 0).  NULL with errno and err (ENAMETOOLONG: sock_path longer than a Unix socket's
 * address). */
tagent_tty_t *tagent_tty_open(const char *sock_path, bool pty, long uid, long gid,
                              tsl_error_t *err);
/* How EXEC starts its process (none set: EXEC is refused). */
void tagent_tty_set_exec(tagent_tty_t *t, tagent_exec_fn fn, void *arg);

/* A container job (ctrrun.h): the runtime makes the terminals.  tagent_tty_set_master gives the
 * job's terminal the master side crun made for the container's first process (made
 * non-blocking, window 24x80; t takes it; opened without pty, t serves no terminal before).
 * An EXEC's process is started by fn instead, which returns the runtime's pid (its end is the
 * process's: what tagent_tty_reaped sees), the master of the process's terminal in *ptm (t takes
 * it) and the process's session in *sid (0: unknown), killed with the runtime's process group
 * when the job ends.  -1 with why (one line). */
typedef pid_t (*tagent_exec_console_fn)(void *arg, char **argv, int *ptm, pid_t *sid, char *why,
                                        size_t wlen);
void tagent_tty_set_master(tagent_tty_t *t, int ptm);
void tagent_tty_set_exec_console(tagent_tty_t *t, tagent_exec_console_fn fn, void *arg);
/* A child the shim reaped: when it is an EXEC's process, its end goes to its client (after
 * what its terminal holds) and true is returned. */
bool tagent_tty_reaped(tagent_tty_t *t, pid_t pid, int status);
/* The slave's descriptor (close-on-exec), for the job's process; -1 without pty. */
int tagent_tty_slave(const tagent_tty_t *t);
/* Close the shim's copy of the slave once the job's process has it. */
void tagent_tty_close_slave(tagent_tty_t *t);

/* The descriptors to poll now, into p (room for TAGENT_TTY_NFDS).  Returns how many. */
#define TAGENT_TTY_NFDS (3 + 2 * TAGENT_EXEC_MAX)
int tagent_tty_pollfds(tagent_tty_t *t, struct pollfd *p);
/* Act on what poll said of those n descriptors: output to lc (the stdout log; NULL: none) and
 * to the client, input to the PTY, a new client. */
void tagent_tty_handle(tagent_tty_t *t, const struct pollfd *p, int n, tagent_logcap_t *lc);
/* The job has ended: what the PTY still holds goes to the log and the ring, the ring to the
 * client (waiting at most TAGENT_TTY_FLUSH_MS for it), then the EXIT message with exit_text
 * ("exit 0"); EXEC's processes still running are killed (their process groups, SIGKILL) and
 * their clients told; everything is closed and the socket removed.  Frees t (NULL
 * accepted). */
#define TAGENT_TTY_FLUSH_MS 2000
void tagent_tty_finish(tagent_tty_t *t, const char *exit_text, tagent_logcap_t *lc);

#endif
