/* slurmnodes.h - tesseld --slurm: the cluster's nodes and their GPUs (docs/slurm-backend.md,
 * "The cluster's GPUs").
 *
 * Slurm says which nodes there are (`sinfo --json`: name, NodeAddr, state, reason); each
 * node's tessel-node-exporter says what its GPUs and its jobs' slices hold (GET /v1/node,
 * libnodefig's JSON).  A thread of its own (tsn_start) asks both every --slurm-node-poll
 * seconds, without tesseld's lock: sinfo through the Slurm commands' runner (slurm.c), the
 * exporters with libcurl, all nodes at once (curl multi), each answer bounded in time
 * (TSN_CONNECT_MS, TSN_FETCH_MS) and size (TNF_MAX_JSON).  The result replaces the last under
 * a mutex of its own; handlers take a copy (tsn_snapshot) and never wait for a poll.  A node
 * that does not answer keeps its last good figures, with their time; one that Slurm says is
 * DOWN or DRAIN shows as such (its figures are still asked: a drained node runs its jobs on).
 *
 * The parse of sinfo's JSON is pure (tsn_parse_sinfo, test_slurmnodes). */
#ifndef TESSEL_DAEMON_SLURMNODES_H
#define TESSEL_DAEMON_SLURMNODES_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "libnodefig/nodefig.h"
#include "libutil/error.h"

/* How long a node's exporter may take: to accept the connection, and to answer in all.  A
 * node on the cluster's network answers in milliseconds; a node that is off costs the poll
 * this much once (all nodes are asked at once), not once per node. */
#define TSN_CONNECT_MS 1000
#define TSN_FETCH_MS   3000
/* Nodes asked at once: a poll of a 1,000-node cluster opens at most this many connections. */
#define TSN_PARALLEL 64
/* Nodes kept from sinfo at most (a larger cluster is cut, logged). */
#define TSN_MAX_NODES 4096

/* A node as Slurm describes it (sinfo --json, openapi v0.0.38 of Slurm 22.05). */
typedef struct {
    char name[64];
    char addr[64];    /* NodeAddr: where its exporter is asked */
    char state[32];   /* Slurm's base state, lower case: idle, mixed, allocated, down, ... */
    bool drain;       /* DRAIN among its state flags (draining or drained) */
    bool down;        /* the base state is down, or NOT_RESPONDING is among the flags */
    char reason[128]; /* why it is down or drained ("" when none) */
} tsn_slurm_node_t;

/* Parse sinfo --json: *out (malloc'd, the caller frees) and *n.  A node without a name or an
 * address, or with one that is too long or holds anything but letters, digits, '.', '-', '_'
 * and ':', is skipped (never put in a URL); more than TSN_MAX_NODES are cut.  -1 with err
 * when the text is not sinfo's JSON, or when it carries Slurm's own errors (slurmctld down:
 * sinfo exits 0 and says so in "errors"). */
int tsn_parse_sinfo(const char *text, size_t len, tsn_slurm_node_t **out, size_t *n,
                    tsl_error_t *err);

typedef struct tsn_state tsn_state_t;

/* What tesseld makes of a node. */
typedef enum {
    TSN_UNKNOWN = 0, /* not asked yet */
    TSN_UP,          /* Slurm has it up, its exporter answered at the last poll */
    TSN_DOWN,        /* Slurm says DOWN (or not responding) */
    TSN_DRAIN,       /* Slurm says DRAIN */
    TSN_UNREACHABLE, /* up in Slurm, but its exporter did not answer */
} tsn_status_t;
const char *tsn_status_name(tsn_status_t s);

typedef struct {
    tsn_slurm_node_t slurm;
    tsn_status_t status;
    char error[256];    /* why its figures are missing or old ("" when fresh) */
    int64_t last_ok_ms; /* when its exporter last answered (ms since the epoch), 0: never */
    bool answered;      /* it answered at the last poll (its figures are that poll's) */
    bool has_figs;      /* figs below are the last good ones (also when old) */
    tnf_node_t figs;
} tsn_node_t;

/* The poll's state (slurmnodes.c writes it, tsn_snapshot reads it).  Private to the two. */
struct tsn_state {
    void *d; /* the daemon (tessd_t *: daemon.h includes this file) */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock; /* the fields below; never held while a poll asks anyone */
    pthread_cond_t cond;
    bool stop;
    tsn_node_t *nodes;
    size_t n;
    int64_t polled_ms;
    char error[256];
};

/* A deep copy of src into dst (its slices duplicated).  0, or -1 (out of memory: dst holds
 * what was copied, for tsn_nodes_free). */
int tsn_node_copy(tsn_node_t *dst, const tsn_node_t *src);

/* The last poll's nodes, copied (the caller frees with tsn_nodes_free); *polled_ms when that
 * poll ended (0: none yet), and its failure in why ("" when sinfo answered).  Takes the
 * nodes' own mutex, never tesseld's lock: may be called with or without it. */
tsn_node_t *tsn_snapshot(tsn_state_t *s, size_t *n, int64_t *polled_ms, char *why, size_t len);
void tsn_nodes_free(tsn_node_t *nodes, size_t n);

#endif
