/* shm_layout.h - the on-file records of a slice file, version 1.
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
#define TSHM_PROC_SIZE   1024
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
    uint8_t reserved[TSHM_HEADER_SIZE - 64];
};

enum tshm_dev_state { TSHM_DEV_FREE = 0, TSHM_DEV_USED = 1 };

struct tshm_device_rec {
    unsigned char uuid[16];
    _Atomic uint32_t state; /* enum tshm_dev_state */
    uint32_t pad;
    _Atomic uint64_t limit;    /* bytes, TSHM_UNLIMITED = no limit */
    _Atomic uint64_t used;     /* bytes charged by the slice */
    _Atomic uint64_t ctx_cost; /* measured bytes per context, 0 = unknown */
    /* Reserved for issue 6: compute share, priority, suspend state. */
    uint8_t reserved[TSHM_DEVICE_SIZE - 48];
};

/* FREE -> BUSY (claiming) -> ACTIVE -> BUSY (reclaiming or leaving) -> FREE;
 * every move out of FREE or ACTIVE is a compare-and-swap. */
enum tshm_proc_state { TSHM_PROC_FREE = 0, TSHM_PROC_ACTIVE = 1, TSHM_PROC_BUSY = 2 };

struct tshm_proc_rec {
    _Atomic uint32_t state; /* enum tshm_proc_state */
    int32_t pid;
    uint64_t start_time; /* /proc/PID/stat field 22 */
    char comm[16];
    /* Reserved for issue 6: per-process compute counters, suspend flag. */
    uint8_t reserved[TSHM_PROC_SIZE - 32 - 8 * TSHM_MAX_DEVICES];
    _Atomic uint64_t used[TSHM_MAX_DEVICES]; /* bytes charged per device */
};

_Static_assert(sizeof(struct tshm_header) == TSHM_HEADER_SIZE, "header size");
_Static_assert(sizeof(struct tshm_device_rec) == TSHM_DEVICE_SIZE, "device record size");
_Static_assert(sizeof(struct tshm_proc_rec) == TSHM_PROC_SIZE, "process record size");
_Static_assert(TSHM_DEVICES_OFFSET + TSHM_MAX_DEVICES * TSHM_DEVICE_SIZE <= TSHM_PROCS_OFFSET,
               "devices overlap processes");

#endif
