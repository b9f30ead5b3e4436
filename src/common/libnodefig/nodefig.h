/* nodefig.h - one node's GPU figures: what tessel-node-exporter measures on a Slurm node and
 * what tesseld --slurm reads from it (docs/slurm-backend.md, "The cluster's GPUs").
 *
 * A node's figures are its GPUs (NVML: model, memory total and used) and the GPU slices of the
 * Slurm jobs on it (job, user, memory limit and used, compute share).  The exporter fills a
 * tnf_node_t (src/exporter/sample.c) and serves it two ways: as JSON (tnf_to_json, GET
 * /v1/node, for tesseld) and as Prometheus text (tnf_prom, GET /metrics, for Prometheus).
 * tesseld parses the JSON back (tnf_from_json: every field checked, every count bounded: the
 * answer comes over the network) and writes the same series, for every node, with the same
 * function, so that the two /metrics agree name for name (docs/metrics.md, "Per node").
 *
 * Pure: no I/O, no clock; jansson and libutil only.  Prefix tnf_. */
#ifndef TESSEL_NODEFIG_H
#define TESSEL_NODEFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "libutil/error.h"
#include "libutil/prom.h"

/* The JSON's version: a reader refuses another (a field changed meaning). */
#define TNF_VERSION 1
/* GPUs of one node: NVML indexes 0..63, as the slice file's device records. */
#define TNF_MAX_GPUS 64
/* Slices of one node: a job's slice per GPU; 64 GPUs with 64 jobs each is 4096. */
#define TNF_MAX_SLICES 4096
/* Largest JSON accepted: a slice is ~150 bytes, a GPU ~200: 4096 slices fit in 1 MiB. */
#define TNF_MAX_JSON (1u << 20)

typedef struct {
    int index;             /* NVML index (what Slurm's gres.conf File= digits name) */
    char uuid[96];         /* "GPU-..." */
    char model[96];        /* NVML's name */
    uint64_t memory_total; /* bytes */
    bool used_known;       /* memory_used below is NVML's */
    uint64_t memory_used;  /* bytes in use on the GPU, every process's (the driver's count) */
    int utilization;       /* percent, -1: unknown */
} tnf_gpu_t;

typedef struct {
    int64_t job;           /* Slurm job id, > 0 */
    char user[64];         /* the job's account (owner of its slice file), or its uid */
    int gpu;               /* NVML index of the GPU */
    uint64_t memory_limit; /* bytes, from root's files of the SPANK plugin; 0: unknown */
    uint64_t memory_used;  /* bytes the job's processes hold (its slice file: the interposer's
                              count in the job) */
    unsigned compute_pct;  /* compute share, percent 1..100; 0: unknown */
} tnf_slice_t;

typedef struct {
    char node[64];      /* the node's name (its hostname, or --node) */
    int64_t sampled_ms; /* when the figures were taken, ms since the epoch */
    char error[192];    /* "" or why the GPU figures are missing (NVML failed) */
    bool simulated;     /* the NVML is Tessel's test double (tests/fake): no real GPU */
    int ngpus;
    tnf_gpu_t gpus[TNF_MAX_GPUS];
    size_t nslices, cap;
    tnf_slice_t *slices; /* malloc'd, cap entries, nslices used; freed by tnf_node_clear */
} tnf_node_t;

/* Free the slices and zero *n (which may be zeroed memory already).  Accepts NULL. */
void tnf_node_clear(tnf_node_t *n);

/* Add a slice (copied).  0, or -1 with errno (ENOMEM, E2BIG past TNF_MAX_SLICES). */
int tnf_add_slice(tnf_node_t *n, const tnf_slice_t *s);

/* The figures as JSON (a new reference; NULL when out of memory):
 *   {"version":1,"node":"n1","sampled_at_ms":..,"error":null|"...","simulated":false,
 *    "gpus":[{"index":0,"uuid":"GPU-..","model":"..","memory_total":..,
 *             "memory_used":..|null,"utilization":..|null}],
 *    "slices":[{"job":12,"user":"alice","gpu":0,"memory_limit":..|null,"memory_used":..,
 *               "compute_limit":50|null}]} */
json_t *tnf_to_json(const tnf_node_t *n);

/* Parse len bytes of JSON as tnf_to_json writes it into *out (zeroed first; the caller
 * tnf_node_clear()s it, also after a failure).  Refused (-1, errno EINVAL or EPROTO for
 * another version, and one line in err): more than TNF_MAX_JSON bytes, not JSON, a field
 * missing or of the wrong type, a number out of range (negative sizes, an index outside
 * 0..63, a job id <= 0, a share above 100), a string too long for its field or holding a
 * control character, more than TNF_MAX_GPUS GPUs or TNF_MAX_SLICES slices, a slice on a GPU
 * the node does not list.  Unknown fields are ignored (a newer exporter may add some). */
int tnf_from_json(const char *text, size_t len, tnf_node_t *out, tsl_error_t *err);

/* Prometheus series of n nodes (docs/metrics.md, "Per node"), each family once with every
 * node's samples; every series carries node="NAME".  nodes[i] may be NULL (skipped). */
void tnf_prom(tsl_prom_t *p, const tnf_node_t *const *nodes, size_t n);

#endif
