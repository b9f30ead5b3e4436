/* nvml.c - NVML's memory view of a slice (nvidia-smi, NVML-based tools).
 *
 * NVML numbers devices on its own (by PCI bus id, ignoring
 * CUDA_VISIBLE_DEVICES), so a device is matched to the slice by UUID among
 * the devices the slice's processes have registered.  No NVML call
 * initialises CUDA: a process that asks NVML for memory and then forks
 * (vLLM, multiprocessing pools, DataLoader workers) must leave a child that
 * can still initialise CUDA, which the driver refuses to a child of a
 * process that initialised it.  A device the slice has not registered yet
 * gets the limit the configuration gives its CUDA ordinal when
 * CUDA_VISIBLE_DEVICES (UUIDs) or CUDA_DEVICE_ORDER=PCI_BUS_ID tell which
 * ordinal it is, else the lowest limit the process has (tcu_nvml_limit, the
 * conservative view); a device that cannot be the process's keeps NVML's
 * own figures.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interposer/interposer.h"

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
/* Resolved with the handle (calls we make, not hooks). */
static nvmlDeviceGetIndex_fn nvml_index;
static nvmlDeviceGetCount_v2_fn nvml_count;
static nvmlDeviceGetComputeRunningProcesses_v3_fn nvml_procs;

static void nvml_open(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    tcu_symbols_resolve(NULL, h);
    nvml_index = (nvmlDeviceGetIndex_fn)tcu_real_dlsym(h, "nvmlDeviceGetIndex");
    nvml_count = (nvmlDeviceGetCount_v2_fn)tcu_real_dlsym(h, "nvmlDeviceGetCount_v2");
    nvml_procs = (nvmlDeviceGetComputeRunningProcesses_v3_fn)tcu_real_dlsym(
        h, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (TCU_REAL(nvmlInit_v2))
        TCU_REAL(nvmlInit_v2)();
    tcu.nvml = h;
}

void *tcu_nvml_handle(void)
{
    pthread_once(&nvml_once, nvml_open);
    return tcu.nvml;
}

/* Processes listed per query (on the stack, 3 KiB): more than a GPU runs
 * at once in practice; a longer list makes the figure unknown (the caller
 * then falls back to the device's free memory). */
#define MAX_PROCS 128

int tcu_nvml_mem(CUdevice ord, struct tcu_nvml_mem *m)
{
    m->self_ok = 0;
    m->dev_free = 0;
    m->self = 0;
    if (!tcu_nvml_handle() || !TCU_REAL(nvmlDeviceGetHandleByUUID) ||
        !TCU_REAL(nvmlDeviceGetMemoryInfo) || !TCU_REAL(cuDeviceGetUuid))
        return -1;
    CUuuid u;
    if (TCU_REAL(cuDeviceGetUuid)(&u, ord) != CUDA_SUCCESS)
        return -1;
    const unsigned char *b = (const unsigned char *)u.bytes;
    char s[64];
    snprintf(s, sizeof s,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    nvmlDevice_t d;
    nvmlMemory_t mem;
    if (TCU_REAL(nvmlDeviceGetHandleByUUID)(s, &d) != NVML_SUCCESS)
        return -1;
    if (TCU_REAL(nvmlDeviceGetMemoryInfo)(d, &mem) == NVML_SUCCESS)
        m->dev_free = mem.free;
    if (nvml_procs) {
        nvmlProcessInfo_t infos[MAX_PROCS];
        unsigned n = MAX_PROCS;
        if (nvml_procs(d, &n, infos) == NVML_SUCCESS) {
            m->self_ok = 1;
            unsigned me = (unsigned)getpid();
            for (unsigned i = 0; i < n && i < MAX_PROCS; i++)
                if (infos[i].pid == me)
                    m->self = infos[i].usedGpuMemory;
        }
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" -> 16 bytes; 0 or -1. */
static int parse_uuid(const char *s, unsigned char out[16])
{
    const char *p = strchr(s, '-');
    if (!p)
        return -1;
    p++;
    int n = 0;
    while (*p && n < 16) {
        if (*p == '-') {
            p++;
            continue;
        }
        int hi = hexval(p[0]), lo = hexval(p[1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[n++] = (unsigned char)(hi << 4 | lo);
        p += 2;
    }
    return n == 16 ? 0 : -1;
}

/* The slice's (free, total) for an NVML device; 0 when it is not in the
 * slice. */
static int nvml_view(nvmlDevice_t device, uint64_t rfree, uint64_t rtotal, uint64_t *f, uint64_t *t)
{
    if (!tcu.slice) { /* failed closed */
        *f = *t = 0;
        return 1;
    }
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned char uuid[16];
    if (!TCU_REAL(nvmlDeviceGetUUID) ||
        TCU_REAL(nvmlDeviceGetUUID)(device, buf, sizeof buf) != NVML_SUCCESS ||
        parse_uuid(buf, uuid) < 0)
        return 0;
    int n = tshm_ndevices(tcu.slice);
    for (int i = 0; i < n; i++) {
        tshm_device_info_t di;
        if (tshm_device_info(tcu.slice, i, &di) == 0 && memcmp(di.uuid, uuid, 16) == 0) {
            tcu_view(di.limit, di.used, rfree, rtotal, f, t);
            return 1;
        }
    }
    if (!tcu.cfg.ok) {
        *f = *t = 0;
        return 1;
    }
    /* Not registered: no process of the slice has used it, so nothing is
     * charged on it; its limit comes from the configuration. */
    unsigned idx = 0, count = 0;
    if (!nvml_index || nvml_index(device, &idx) != NVML_SUCCESS)
        idx = UINT32_MAX;
    if (!nvml_count || nvml_count(&count) != NVML_SUCCESS)
        count = 0;
    const char *order = getenv("CUDA_DEVICE_ORDER");
    int pci = order && strcmp(order, "PCI_BUS_ID") == 0 && idx != UINT32_MAX;
    uint64_t limit;
    if (!tcu_nvml_limit(tcu.cfg.limit, getenv("CUDA_VISIBLE_DEVICES"), pci, buf, idx, count,
                        &limit))
        return 0;
    tcu_view(limit, 0, rfree, rtotal, f, t);
    return 1;
}

TCU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    tcu_ready();
    if (!tcu_nvml_handle() || !TCU_REAL(nvmlDeviceGetMemoryInfo))
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = TCU_REAL(nvmlDeviceGetMemoryInfo)(device, memory);
    uint64_t f, t;
    if (r == NVML_SUCCESS && memory && nvml_view(device, memory->free, memory->total, &f, &t)) {
        memory->total = t;
        memory->free = f;
        memory->used = t - f;
    }
    return r;
}

TCU_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    tcu_ready();
    if (!tcu_nvml_handle() || !TCU_REAL(nvmlDeviceGetMemoryInfo_v2))
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = TCU_REAL(nvmlDeviceGetMemoryInfo_v2)(device, memory);
    uint64_t f, t;
    if (r == NVML_SUCCESS && memory && nvml_view(device, memory->free, memory->total, &f, &t)) {
        /* The slice has no driver-reserved part: total = used + free. */
        memory->total = t;
        memory->reserved = 0;
        memory->free = f;
        memory->used = t - f;
    }
    return r;
}

/* ---- process lists: only the slice's own processes ------------------------
 *
 * Inside a slice NVML shows the slice's memory (above); its process lists
 * (nvidia-smi's "Processes", --query-compute-apps, nvitop, DCGM's per-process
 * fields) must match it: a job sees its own processes and nothing of its
 * neighbours (their pids, names and memory are none of its business, and a
 * list adding up to more than the total it is shown is inconsistent).  A
 * process is the slice's when it holds a slot in the slice file; the
 * driver's figures of the processes kept are left as they are.  A process
 * that failed closed (no slice) sees an empty list.  tesseld puts no job
 * in a PID namespace, so the slice file's pids are NVML's.
 */

/* Entries asked of the driver per call before the heap is used. */
#define PROC_STACK 64

struct keep_arg {
    unsigned char *list; /* the driver's entries, esz bytes each, pid first */
    size_t esz;
    unsigned n;
    unsigned char *keep;
};

static int keep_proc(const tshm_proc_info_t *p, void *arg)
{
    struct keep_arg *k = arg;
    for (unsigned i = 0; i < k->n; i++) {
        unsigned pid;
        memcpy(&pid, k->list + (size_t)i * k->esz, sizeof pid);
        if ((pid_t)pid == p->pid)
            k->keep[i] = 1;
    }
    return 0;
}

/* Copies the slice's entries of list (n entries of esz bytes, pid first)
 * to out, which has room for *count; *count becomes the number of the
 * slice's entries.  NVML_ERROR_INSUFFICIENT_SIZE (nothing copied) when
 * they do not fit. */
static nvmlReturn_t keep_slice(const unsigned char *list, size_t esz, unsigned n,
                               unsigned int *count, void *out)
{
    unsigned char keepbuf[PROC_STACK];
    unsigned char *keep = n <= PROC_STACK ? keepbuf : calloc(n, 1);
    if (!keep)
        return NVML_ERROR_MEMORY;
    memset(keep, 0, n);
    if (tcu.slice) {
        struct keep_arg k = {(unsigned char *)list, esz, n, keep};
        tshm_foreach_proc(tcu.slice, keep_proc, &k);
    }
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++)
        kept += keep[i];
    nvmlReturn_t r = NVML_SUCCESS;
    if (kept > *count) {
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned j = 0;
        for (unsigned i = 0; i < n; i++)
            if (keep[i])
                memcpy((unsigned char *)out + (size_t)j++ * esz, list + (size_t)i * esz, esz);
    }
    *count = kept;
    if (keep != keepbuf)
        free(keep);
    return r;
}

typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned int *, void *);

/* Calls real for the whole list (growing a heap buffer while the driver
 * says it is too short), keeps the slice's entries and hands them out
 * with NVML's size rules: *count in is the room in infos; out, the
 * number written, or the number needed with NVML_ERROR_INSUFFICIENT_SIZE. */
static nvmlReturn_t procs_filtered(procs_fn real, size_t esz, nvmlDevice_t device,
                                   unsigned int *count, void *infos)
{
    if (!real)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!count || (*count && !infos))
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned char stack[PROC_STACK * sizeof(nvmlProcessInfo_t)];
    unsigned char *list = stack, *heap = NULL;
    unsigned cap = PROC_STACK, n;
    nvmlReturn_t r;
    for (int tries = 0;; tries++) {
        n = cap;
        r = real(device, &n, list);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || tries == 4)
            break;
        cap = n + 16; /* processes may start between two calls */
        unsigned char *m = realloc(heap, (size_t)cap * esz);
        if (!m) {
            r = NVML_ERROR_MEMORY;
            break;
        }
        list = heap = m;
    }
    if (r != NVML_SUCCESS) {
        free(heap);
        return r;
    }
    r = keep_slice(list, esz, n, count, infos);
    free(heap);
    return r;
}

#define TCU_PROCS_HOOK(name, type)                                                                 \
    TCU_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, type *infos)        \
    {                                                                                              \
        tcu_ready();                                                                               \
        if (!tcu_nvml_handle() || !TCU_REAL(name))                                                 \
            return NVML_ERROR_UNINITIALIZED;                                                       \
        return procs_filtered((procs_fn)TCU_REAL(name), sizeof(type), device, infoCount, infos);   \
    }

TCU_PROCS_HOOK(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t)
TCU_PROCS_HOOK(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_t)
TCU_PROCS_HOOK(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t)
TCU_PROCS_HOOK(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t)
TCU_PROCS_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_t)
TCU_PROCS_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t)
TCU_PROCS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t)
TCU_PROCS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_t)
TCU_PROCS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t)

/* The same for the list of r550+ (nvmlProcessDetailList_v1_t; its mode
 * picks compute, graphics or MPS).  A version this build does not know is
 * refused (its entries could be larger: nothing is passed through
 * unfiltered). */
TCU_EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                              nvmlProcessDetailList_t *plist)
{
    tcu_ready();
    nvmlDeviceGetRunningProcessDetailList_fn real = TCU_REAL(nvmlDeviceGetRunningProcessDetailList);
    if (!tcu_nvml_handle() || !real)
        return NVML_ERROR_UNINITIALIZED;
    if (!plist)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (plist->version != nvmlProcessDetailList_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (plist->numProcArrayEntries && !plist->procArray)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlProcessDetail_v1_t stack[PROC_STACK / 2];
    nvmlProcessDetailList_t q = {plist->version, plist->mode, PROC_STACK / 2, stack};
    nvmlProcessDetail_v1_t *heap = NULL;
    nvmlReturn_t r;
    for (int tries = 0;; tries++) {
        r = real(device, &q);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || tries == 4)
            break;
        unsigned cap = q.numProcArrayEntries + 16;
        nvmlProcessDetail_v1_t *m = realloc(heap, (size_t)cap * sizeof *m);
        if (!m) {
            r = NVML_ERROR_MEMORY;
            break;
        }
        heap = m;
        q.procArray = heap;
        q.numProcArrayEntries = cap;
    }
    if (r == NVML_SUCCESS)
        r = keep_slice((const unsigned char *)q.procArray, sizeof(nvmlProcessDetail_v1_t),
                       q.numProcArrayEntries, &plist->numProcArrayEntries, plist->procArray);
    free(heap);
    return r;
}
