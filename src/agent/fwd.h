/* fwd.h - a service replica's network namespace and its forwarder (docs/serving.md, "How a
 * replica is reached"; docs/security.md, H1).
 *
 * A replica is an ordinary HTTP server that listens on 127.0.0.1:$PORT.  tessel-shim runs it in
 * a network namespace of its own (loopback up, nothing else), so that port exists only there:
 * no other account of the node can connect to it.  The one way in is a Unix socket that the
 * shim binds (as root) in tesseld's directory <data>/replicas (root's, 0711: traversed, never
 * listed or written by anyone else), owned by the job's account and the group haproxy, mode
 * 0660: HAProxy (group haproxy), the owner and root may connect, nobody else.  A forwarder
 * process serves it:
 *
 *   shim (root)                               forwarder (forked by the shim)
 *   tagent_fwd_netns  -> the job's netns fd
 *   tagent_fwd_listen -> the socket, bound
 *   tagent_fwd_start  ----------------------> joins the job's cgroups and netns, drops to the
 *                                             job's account (no capability left, not dumpable,
 *                                             no new privileges), ends with the shim
 *   (the job's process joins the netns fd)    tagent_fwd_loop: for each connection accepted
 *                                             from a permitted peer, a TCP connection to
 *                                             127.0.0.1:PORT in the job's namespace; bytes
 *                                             copied both ways until both sides end
 *   job ended: SIGKILL, reaped; socket removed (tagent_fwd_unlink)
 *
 * Prefix tagent_fwd_. */
#ifndef TESSEL_AGENT_FWD_H
#define TESSEL_AGENT_FWD_H

#include <stdbool.h>
#include <sys/types.h>

#include "libutil/error.h"

/* Connections one forwarder holds at once (each: two descriptors, two buffers of
 * TAGENT_FWD_BUF): HAProxy opens at most the service's concurrency (maxconn) plus a health
 * check a second; a replica without a concurrency limit gets what HAProxy's own maxconn (8192)
 * lets through, and 256 at once is far above what one model server answers in parallel.  Past
 * it, new connections wait in the listen backlog until one ends. */
#define TAGENT_FWD_MAX_CONN 256
/* Bytes buffered each way per connection: 16 KiB is one read of a typical request or answer
 * chunk; a peer that does not read makes the other side wait (no unbounded buffering). */
#define TAGENT_FWD_BUF (16u << 10)
/* Backlog of the Unix socket: connections past TAGENT_FWD_MAX_CONN wait there. */
#define TAGENT_FWD_BACKLOG 128

/* Make a new network namespace with its loopback up, and return a descriptor of it
 * (O_CLOEXEC); the caller stays in its own.  Root (CAP_SYS_ADMIN), single-threaded.  -1 with
 * errno and err. */
int tagent_fwd_netns(tsl_error_t *err);

/* Bind and listen on the Unix socket path (absolute; at most 107 bytes): its directory must be
 * root's and writable by no one else (tesseld's <data>/replicas or <data>/jobsvc); a socket
 * left at that name (a shim killed before it cleaned up) is removed first, anything else there
 * is refused (EEXIST).  The socket gets owner uid, group gid, mode 0660 (a replica's: HAProxy's
 * group).  tagent_fwd_listen_mode: the same with the mode given (0600 for a job's service).  The
 * listening descriptor (non-blocking, close-on-exec), or -1 with errno and err. */
int tagent_fwd_listen(const char *path, uid_t uid, gid_t gid, tsl_error_t *err);
int tagent_fwd_listen_mode(const char *path, uid_t uid, gid_t gid, mode_t mode, tsl_error_t *err);

/* Remove the socket at path (only a socket; in the same checked directory).  0, or -1 with
 * errno. */
int tagent_fwd_unlink(const char *path);

/* Who may use the forwarder (checked with SO_PEERCRED at each accept, beside the socket's mode):
 * root, the account uid, or a process whose group is gid (HAProxy's) unless no_group (a job's
 * web service, docs/job-services.md: root and the owner only). */
typedef struct {
    uid_t uid;
    gid_t gid;
    bool no_group;
    int port; /* 127.0.0.1:port in the forwarder's network namespace */
} tagent_fwd_peer_t;

/* The forwarder's loop on the listening descriptor lfd: accepts permitted peers, connects each
 * to 127.0.0.1:p->port, copies both ways (poll, non-blocking; a connection that sends nothing
 * holds its slot only); a connection the replica refuses is closed.  Returns only on a poll
 * error (-1 with errno). */
int tagent_fwd_loop(int lfd, const tagent_fwd_peer_t *p);

/* Fork the forwarder: it keeps lfd only, writes "0" into each cgroup.procs file of cg (n of
 * them; the job's, so that it counts with the job), joins the network namespace netns, drops
 * to uid:gid without supplementary groups (uid <= 0, a job that runs as root: it keeps uid 0
 * but loses every capability), is made non-dumpable with no new privileges and SIGKILL at its
 * parent's death, then runs tagent_fwd_loop.  Called by root, single-threaded; the caller
 * reaps it.  Its pid, or -1 with errno and err (a failure in the child is said on stderr and
 * ends it with status 1). */
pid_t tagent_fwd_start(int lfd, int netns, const tagent_fwd_peer_t *p, long uid, long gid,
                       const char *const *cg, int n, tsl_error_t *err);

#endif
