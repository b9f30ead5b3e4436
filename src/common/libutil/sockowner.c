/* sockowner.c - the owner of a local TCP peer (sockowner.h). */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdalign.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "libutil/sockowner.h"

/* The request for the peer's socket: its source is our peer's address, its destination ours
 * (the kernel's exact lookup matches the socket whose local end is src and remote end dst). */
static int fill_id(struct inet_diag_req_v2 *r, const struct sockaddr_storage *me,
                   const struct sockaddr_storage *peer)
{
    r->sdiag_family = (unsigned char)me->ss_family;
    r->sdiag_protocol = IPPROTO_TCP;
    r->idiag_states = ~0u;
    r->id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    r->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    if (me->ss_family == AF_INET) {
        const struct sockaddr_in *m = (const void *)me, *p = (const void *)peer;
        r->id.idiag_sport = p->sin_port;
        r->id.idiag_dport = m->sin_port;
        memcpy(r->id.idiag_src, &p->sin_addr, 4);
        memcpy(r->id.idiag_dst, &m->sin_addr, 4);
        return 0;
    }
    if (me->ss_family == AF_INET6) {
        const struct sockaddr_in6 *m = (const void *)me, *p = (const void *)peer;
        r->id.idiag_sport = p->sin6_port;
        r->id.idiag_dport = m->sin6_port;
        memcpy(r->id.idiag_src, &p->sin6_addr, 16);
        memcpy(r->id.idiag_dst, &m->sin6_addr, 16);
        return 0;
    }
    errno = EAFNOSUPPORT;
    return -1;
}

int tsl_tcp_peer_owner(int fd, uid_t *uid)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
        getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
        return -1;
    if (type != SOCK_STREAM || me.ss_family != peer.ss_family) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    struct {
        struct nlmsghdr nh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    if (fill_id(&req.r, &me, &peer) < 0)
        return -1;
    req.nh.nlmsg_len = sizeof req;
    req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.nh.nlmsg_seq = 1;
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    /* The kernel answers at once; a bound all the same, never a thread held by it. */
    struct timeval tv = {.tv_sec = 2};
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    int rc = -1;
    alignas(struct nlmsghdr) char buf[4096];
    if (setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&to, sizeof to) < 0)
        goto out;
    ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n < 0)
        goto out;
    for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(h);
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e)) {
                errno = EPROTO;
                goto out;
            }
            if (e->error == -ENOENT) {
                rc = 0;
                goto out;
            }
            errno = e->error ? -e->error : EPROTO;
            goto out;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
            h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
            continue;
        const struct inet_diag_msg *m = NLMSG_DATA(h);
        /* The socket asked for, and no other. */
        if (m->id.idiag_sport != req.r.id.idiag_sport ||
            m->id.idiag_dport != req.r.id.idiag_dport ||
            memcmp(m->id.idiag_src, req.r.id.idiag_src, sizeof m->id.idiag_src) != 0 ||
            memcmp(m->id.idiag_dst, req.r.id.idiag_dst, sizeof m->id.idiag_dst) != 0)
            continue;
        /* A socket that no process holds any more (closed: an orphan, or a time-wait entry,
         * which the kernel reports with uid 0) is nobody's: as if not found. */
        if (m->idiag_inode == 0) {
            rc = 0;
            goto out;
        }
        *uid = (uid_t)m->idiag_uid;
        rc = 1;
        goto out;
    }
    errno = EPROTO;
out:;
    int saved = errno;
    close(nl);
    errno = saved;
    return rc;
}
