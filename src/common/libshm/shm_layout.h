/* shm_layout.h - the on-file records of a slice file, version 2.
 *
 * Version 2 (issue 6) added the compute side: the suspend control word in
 * the header, the compute share, pacing bucket and busy counters in the
 * device records, and per-process launch/in-flight counters and busy time
 * per device in process records, which grew from 1 KiB to 2 KiB.
 *
 * Private to libshm (shm.c and its tests): other code reads a slice through
 * the functions of shm.h.  Any change to a record's meaning or size bumps
 * TSHM_VERSION; new fields go into the reserved space and must read as zero
 * in files written by older code.  Sizes are fixed by _Static_assert below.
 */
#ifndef TESSEL_SHM_LAYOUT_H
#define TESSEL_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "libshm/shm.h"

#define TSHM_HEADER_SIZE 256
#define TSHM_DEVICE_SIZE 128
#define TSHM_PROC_SIZE   2048
/* Devices start right after the header; processes start on a page boundary
 * after the devices so the table can be remapped page-wise. */
#define TSHM_DEVICES_OFFSET TSHM_HEADER_SIZE
#define TSHM_PROCS_OFFSET   12288

struct tshm_header {
    uint64_t magic;              /* TSHM_MAGIC, written last at creation */
    uint32_t version;            /* TSHM_VERSION */
    uint32_t header_size;        /* TSHM_HEADER_SIZE */
    uint32_t device_size;        /* TSHM_DEVICE_SIZE */
    uint32_t proc_size;          /* TSHM_PROC_SIZE */
    uint32_t max_devices;        /* TSHM_MAX_DEVICES */
    uint32_t flags;              /* 0; reserved for later versions */
    uint64_t devices_offset;     /* TSHM_DEVICES_OFFSET */
    uint64_t procs_offset;       /* TSHM_PROCS_OFFSET */
    _Atomic uint32_t ndevices;   /* device records in use (claimed in order) */
    _Atomic uint32_t proc_cap;   /* process slots in the file; only grows */
    _Atomic uint64_t generation; /* bumped at each slot claim/free (readers) */
    _Atomic uint32_t suspend;    /* enum tshm_run: set by tesseld, read per launch */
    uint32_t pad;
    _Atomic uint64_t suspend_gen; /* bumped by every tshm_suspend / tshm_resume */
    /* Issue 21 item 3 (idle reclamation, docs/suspend.md), in what version 2 reserved (zero in
     * older files: no work seen, not reclaimed, no wake asked). */
    _Atomic uint32_t work;    /* 1: a launch since tesseld last cleared it (tshm_note_work) */
    _Atomic uint32_t reclaim; /* 1: tesseld gave the slice's GPU memory back while idle */
    _Atomic uint32_t wake;    /* 1: a call of the job waits for the reclaimed slice */
    uint32_t pad3;
    uint8_t reserved[TSHM_HEADER_SIZE - 96];
};

/* core_flags: bits 0-7 the mode, 8-15 the priority, bit 31 "configured"
 * (so that a strict, low-priority configuration is not 0 = unset). */
#define TSHM_CORE_MODE_MASK  0xffu
#define TSHM_CORE_PRIO_SHIFT 8
#define TSHM_CORE_SET        0x80000000u

enum tshm_dev_state { TSHM_DEV_FREE = 0, TSHM_DEV_USED = 1 };

struct tshm_device_rec {
    unsigned char uuid[16];
    _Atomic uint32_t state; /* enum tshm_dev_state */
    uint32_t pad;
    _Atomic uint64_t limit;    /* bytes, TSHM_UNLIMITED = no limit */
    _Atomic uint64_t used;     /* bytes charged by the slice */
    _Atomic uint64_t ctx_cost; /* measured bytes per context, 0 = unknown */
    /* Compute (issue 6; docs/compute-shares.md). */
    _Atomic uint32_t core_limit; /* percent of the device, 0 = none (unlimited) */
    _Atomic uint32_t core_flags; /* TSHM_CORE_SHARED | priority << TSHM_CORE_PRIO_SHIFT */
    _Atomic int64_t credit_ns;   /* pacing bucket: device ns the slice may still use */
    _Atomic uint64_t refill_ns;  /* CLOCK_MONOTONIC of the bucket's last refill */
    _Atomic uint64_t busy_ns;    /* measured device time of the slice's work */
    _Atomic uint64_t launches;   /* launches counted */
    _Atomic uint64_t waited_ns;  /* time launches were held back (pacing) */
    _Atomic uint32_t rate_ppm;   /* share the pacing applies now, parts per million */
    uint32_t pad2;
    /* Issue 12, in what version 2 reserved (zero in older files: not
     * measured yet).  ctx_cost above is the primary context's. */
    _Atomic uint64_t ctx_cost_created; /* measured bytes per cuCtxCreate context */
    /* Issue 21 (oversubscription), the last of what version 2 reserved (zero in older files:
     * off).  Allocations past limit served from managed memory kept in host RAM. */
    _Atomic uint64_t host_limit; /* bytes the slice may spill into host memory, 0 = off */
    _Atomic uint64_t host_used;  /* bytes spilled (managed, preferred on the host) */
};

/* FREE -> BUSY (claiming) -> ACTIVE -> BUSY (reclaiming or leaving) -> FREE;
 * every move out of FREE or ACTIVE is a compare-and-swap. */
enum tshm_proc_state { TSHM_PROC_FREE = 0, TSHM_PROC_ACTIVE = 1, TSHM_PROC_BUSY = 2 };

struct tshm_proc_rec {
    _Atomic uint32_t state; /* enum tshm_proc_state */
    int32_t pid;
    uint64_t start_time; /* /proc/PID/stat field 22 */
    char comm[16];
    _Atomic uint32_t launching; /* threads between the suspend check and the driver call */
    _Atomic uint32_t inflight;  /* measured launches not yet seen complete */
    _Atomic uint32_t waiting;   /* threads held by a suspend */
    uint32_t pad;
    uint8_t reserved[TSHM_PROC_SIZE - 48 - 24 * TSHM_MAX_DEVICES];
    /* Issue 21, in what version 2 reserved (zero in older files): spilled bytes per device. */
    _Atomic uint64_t host_used[TSHM_MAX_DEVICES];
    _Atomic uint64_t used[TSHM_MAX_DEVICES];    /* bytes charged per device */
    _Atomic uint64_t busy_ns[TSHM_MAX_DEVICES]; /* measured device time per device */
};

_Static_assert(sizeof(struct tshm_header) == TSHM_HEADER_SIZE, "header size");
_Static_assert(sizeof(struct tshm_device_rec) == TSHM_DEVICE_SIZE, "device record size");
_Static_assert(sizeof(struct tshm_proc_rec) == TSHM_PROC_SIZE, "process record size");
_Static_assert(TSHM_DEVICES_OFFSET + TSHM_MAX_DEVICES * TSHM_DEVICE_SIZE <= TSHM_PROCS_OFFSET,
               "devices overlap processes");

#endif
