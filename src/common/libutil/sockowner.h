/* sockowner.h - who is at the other end of a TCP connection on this machine.
 *
 * A loopback TCP connection carries no credentials (unlike a Unix socket's SO_PEERCRED), but
 * the kernel knows the socket at its other end when that end is on this machine: its owner is
 * the account whose process made it (the socket's uid, set when it was created, as `ss -e`
 * shows).  tesseld's services listener asks it so that a session's cookie or ticket is good
 * only from a process of the session's own account (docs/job-services.md). */
#ifndef TESSEL_SOCKOWNER_H
#define TESSEL_SOCKOWNER_H

#include <sys/types.h>

/* The owner of the socket at the other end of the connected TCP socket fd (IPv4 or IPv6),
 * looked up through the kernel's socket diagnostics (NETLINK_SOCK_DIAG, an exact lookup of
 * that one socket in this network namespace): 1 and *uid when it is a socket of this machine,
 * 0 when no such socket is here (the peer is another machine) or no process holds it any more
 * (its process closed it: the kernel keeps such a socket a while, reported with uid 0), -1 with
 * errno on failure (EAFNOSUPPORT: fd is not a TCP socket of either family). */
int tsl_tcp_peer_owner(int fd, uid_t *uid);

#endif
