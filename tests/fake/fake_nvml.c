/* fake_nvml.c - the fake NVML, libnvidia-ml.so.1 (TEST DOUBLE).
 *
 * Describes the same simulated devices as the fake libcuda.so.1 (same
 * TESSEL_FAKE_GPUS / TESSEL_FAKE_GPU_UUIDS) and reads their memory use,
 * utilisation and processes from the same device state: the file named by
 * TESSEL_FAKE_STATE, or, without it, the state of the fake libcuda loaded in
 * this process (looked up with dlsym), or else nothing (no usage).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cudaabi/nvml_abi.h"
#include "fake_config.h"
#include "fake_state.h"
#include "tessel_fake.h"
#include "libutil/procstat.h"

#define NVML_ENTRIES(X)                                                                            \
    X(nvmlInit)                                                                                    \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlInitWithFlags)                                                                           \
    X(nvmlShutdown)                                                                                \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetDriverVersion)                                                                  \
    X(nvmlSystemGetCudaDriverVersion)                                                              \
    X(nvmlSystemGetCudaDriverVersion_v2)                                                           \
    X(nvmlDeviceGetCount)                                                                          \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex)                                                                  \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetHandleByUUID)                                                                   \
    X(nvmlDeviceGetHandleByPciBusId)                                                               \
    X(nvmlDeviceGetHandleByPciBusId_v2)                                                            \
    X(nvmlDeviceGetIndex)                                                                          \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetPciInfo)                                                                        \
    X(nvmlDeviceGetPciInfo_v2)                                                                     \
    X(nvmlDeviceGetPciInfo_v3)                                                                     \
    X(nvmlDeviceGetUtilizationRates)                                                               \
    X(nvmlDeviceGetNumGpuCores)                                                                    \
    X(nvmlDeviceGetAttributes_v2)                                                                  \
    X(nvmlDeviceGetTopologyCommonAncestor)                                                         \
    X(nvmlDeviceGetNvLinkState)                                                                    \
    X(nvmlDeviceGetNvLinkRemotePciInfo_v2)                                                         \
    X(nvmlDeviceGetComputeRunningProcesses)                                                        \
    X(nvmlDeviceGetComputeRunningProcesses_v2)                                                     \
    X(nvmlDeviceGetComputeRunningProcesses_v3)                                                     \
    X(nvmlDeviceGetRunningProcessDetailList)

enum {
#define X(n) NC_##n,
    NVML_ENTRIES(X)
#undef X
        NC_COUNT
};

static const char *const nvml_names[NC_COUNT] = {
#define X(n) #n,
    NVML_ENTRIES(X)
#undef X
};

static unsigned long long nvml_calls[NC_COUNT];
#define COUNT(n) __atomic_fetch_add(&nvml_calls[NC_##n], 1, __ATOMIC_RELAXED)

struct nvmlDevice_st {
    int index;
};

static struct {
    pthread_mutex_t lock;
    int refs; /* nvmlInit minus nvmlShutdown */
    int ndev; /* 0 under NVML_INIT_FLAG_NO_GPUS */
    tfake_config_t cfg;
    tfake_shared_t *own; /* mapped TESSEL_FAKE_STATE, or NULL */
    struct nvmlDevice_st dev[TFAKE_MAX_DEVICES];
} n = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The fake driver's version string: a plausible number that says what it is. */
#define FAKE_DRIVER_VERSION "580.00-tessel-fake"

static nvmlReturn_t init(unsigned flags)
{
    if (flags & ~(unsigned)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
        return NVML_ERROR_INVALID_ARGUMENT;
    /* A hung driver (tests of callers' timeouts): no answer while this file exists. */
    const char *hang = getenv("TESSEL_FAKE_NVML_HANG_FILE");
    while (hang && *hang && access(hang, F_OK) == 0) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&n.lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    if (n.refs == 0) {
        tsl_error_t err = {{0}};
        if (tfake_config_from_env(&n.cfg, &err) < 0) {
            fprintf(stderr, "tessel-fake-nvml: %s\n", err.text);
            rc = NVML_ERROR_INVALID_ARGUMENT;
            goto out;
        }
        if (n.cfg.state_path[0] && !(n.own = tfake_state_open(&n.cfg, &err))) {
            fprintf(stderr, "tessel-fake-nvml: %s\n", err.text);
            rc = NVML_ERROR_INVALID_ARGUMENT;
            goto out;
        }
        n.ndev = (flags & NVML_INIT_FLAG_NO_GPUS) ? 0 : n.cfg.ndev;
        for (int i = 0; i < TFAKE_MAX_DEVICES; i++)
            n.dev[i].index = i;
    }
    n.refs++;
out:
    pthread_mutex_unlock(&n.lock);
    return rc;
}

nvmlReturn_t nvmlInit(void)
{
    COUNT(nvmlInit);
    return init(0);
}

nvmlReturn_t nvmlInit_v2(void)
{
    COUNT(nvmlInit_v2);
    return init(0);
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    COUNT(nvmlInitWithFlags);
    return init(flags);
}

nvmlReturn_t nvmlShutdown(void)
{
    COUNT(nvmlShutdown);
    pthread_mutex_lock(&n.lock);
    nvmlReturn_t rc = NVML_SUCCESS;
    if (n.refs == 0) {
        rc = NVML_ERROR_UNINITIALIZED;
    } else if (--n.refs == 0) {
        tfake_state_close(n.own);
        n.own = NULL;
    }
    pthread_mutex_unlock(&n.lock);
    return rc;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    COUNT(nvmlErrorString);
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    default:
        return "Unknown Error";
    }
}

/* The device state this library reads, or NULL (no usage known). */
static tfake_shared_t *state(void)
{
    if (n.own)
        return n.own;
    void *(*fn)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "tessel_fake_state");
    return fn ? (tfake_shared_t *)fn() : NULL;
}

#define NVML_ENTER(name)                                                                           \
    COUNT(name);                                                                                   \
    if (__atomic_load_n(&n.refs, __ATOMIC_ACQUIRE) == 0)                                           \
    return NVML_ERROR_UNINITIALIZED

static int dev_index(nvmlDevice_t d)
{
    if (!d || d < &n.dev[0] || d >= &n.dev[n.ndev])
        return -1;
    return d->index;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    NVML_ENTER(nvmlSystemGetDriverVersion);
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length < sizeof FAKE_DRIVER_VERSION)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(version, FAKE_DRIVER_VERSION, sizeof FAKE_DRIVER_VERSION);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    COUNT(nvmlSystemGetCudaDriverVersion);
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    COUNT(nvmlSystemGetCudaDriverVersion_v2);
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    NVML_ENTER(nvmlDeviceGetCount);
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned)n.ndev;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    NVML_ENTER(nvmlDeviceGetCount_v2);
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned)n.ndev;
    return NVML_SUCCESS;
}

static nvmlReturn_t by_index(unsigned i, nvmlDevice_t *d)
{
    if (!d || i >= (unsigned)n.ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &n.dev[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    NVML_ENTER(nvmlDeviceGetHandleByIndex);
    return by_index(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    NVML_ENTER(nvmlDeviceGetHandleByIndex_v2);
    return by_index(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    NVML_ENTER(nvmlDeviceGetHandleByUUID);
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < n.ndev; i++) {
        char s[41];
        tfake_uuid_format(n.cfg.dev[i].uuid, s);
        if (strcasecmp(s, uuid) == 0) {
            *device = &n.dev[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* Bus ids: domain 0, bus index+1, device 0, function 0, written
 * "0000:01:00.0" (legacy) or "00000000:01:00.0"; either is accepted. */
static nvmlReturn_t by_pci(const char *id, nvmlDevice_t *device)
{
    unsigned dom, bus, dv, fn;
    char tail;
    if (!id || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sscanf(id, "%x:%x:%x.%x%c", &dom, &bus, &dv, &fn, &tail) != 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dom != 0 || dv != 0 || fn != 0 || bus == 0 || bus > (unsigned)n.ndev)
        return NVML_ERROR_NOT_FOUND;
    *device = &n.dev[bus - 1];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    NVML_ENTER(nvmlDeviceGetHandleByPciBusId);
    return by_pci(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    NVML_ENTER(nvmlDeviceGetHandleByPciBusId_v2);
    return by_pci(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    NVML_ENTER(nvmlDeviceGetIndex);
    int i = dev_index(device);
    if (i < 0 || !index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)i;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    NVML_ENTER(nvmlDeviceGetName);
    int i = dev_index(device);
    if (i < 0 || !name)
        return NVML_ERROR_INVALID_ARGUMENT;
    char s[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    tfake_display_name(&n.cfg.dev[i], s, sizeof s);
    if (length < strlen(s) + 1)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(name, s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    NVML_ENTER(nvmlDeviceGetUUID);
    int i = dev_index(device);
    if (i < 0 || !uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length < 41)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    tfake_uuid_format(n.cfg.dev[i].uuid, uuid);
    return NVML_SUCCESS;
}

static void mem_of(int i, uint64_t *total, uint64_t *used)
{
    tfake_shared_t *s = state();
    *total = n.cfg.dev[i].mem;
    *used = 0;
    if (s && i < s->ndev) {
        tfake_state_lock(s);
        tfake_state_reap(s);
        *used = s->dev[i].used;
        tfake_state_unlock(s);
    }
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    NVML_ENTER(nvmlDeviceGetMemoryInfo);
    int i = dev_index(device);
    if (i < 0 || !memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t t, u;
    mem_of(i, &t, &u);
    memory->total = t;
    memory->used = u;
    memory->free = t - u;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    NVML_ENTER(nvmlDeviceGetMemoryInfo_v2);
    int i = dev_index(device);
    if (i < 0 || !memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    uint64_t t, u;
    mem_of(i, &t, &u);
    memory->total = t;
    memory->reserved = 0; /* the fake sets nothing aside */
    memory->used = u;
    memory->free = t - u;
    return NVML_SUCCESS;
}

/* Vendor 0x10de, device id 0xfa4e: not the id of any real GPU. */
#define FAKE_PCI_DEVICE_ID 0xfa4e10deu

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_v1_t *pci)
{
    NVML_ENTER(nvmlDeviceGetPciInfo);
    int i = dev_index(device);
    if (i < 0 || !pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "0000:%02x:00.0", (unsigned char)(i + 1));
    pci->bus = (unsigned)i + 1;
    pci->pciDeviceId = FAKE_PCI_DEVICE_ID;
    return NVML_SUCCESS;
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    int i = dev_index(device);
    if (i < 0 || !pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02x:00.0", (unsigned char)(i + 1));
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02x:00.0", (unsigned char)(i + 1));
    pci->bus = (unsigned)i + 1;
    pci->pciDeviceId = FAKE_PCI_DEVICE_ID;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    NVML_ENTER(nvmlDeviceGetPciInfo_v2);
    return pci_info(device, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    NVML_ENTER(nvmlDeviceGetPciInfo_v3);
    return pci_info(device, pci);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    NVML_ENTER(nvmlDeviceGetUtilizationRates);
    int i = dev_index(device);
    if (i < 0 || !utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    tfake_shared_t *s = state();
    utilization->gpu = 0;
    utilization->memory = 0; /* the fake's kernels move no memory */
    if (s && i < s->ndev) {
        tfake_state_lock(s);
        utilization->gpu = tfake_state_util(s, i);
        tfake_state_unlock(s);
    }
    return NVML_SUCCESS;
}

/* 128 FP32 cores per SM, as on Ampere/Ada/Hopper. */
nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores)
{
    NVML_ENTER(nvmlDeviceGetNumGpuCores);
    int i = dev_index(device);
    if (i < 0 || !numCores)
        return NVML_ERROR_INVALID_ARGUMENT;
    *numCores = n.cfg.dev[i].sms * 128;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    NVML_ENTER(nvmlDeviceGetAttributes_v2);
    int i = dev_index(device);
    if (i < 0 || !attributes)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(attributes, 0, sizeof *attributes);
    attributes->multiprocessorCount = n.cfg.dev[i].sms;
    attributes->gpuInstanceSliceCount = 1;
    attributes->computeInstanceSliceCount = 1;
    attributes->memorySizeMB = n.cfg.dev[i].mem >> 20;
    return NVML_SUCCESS;
}

/* All fake GPUs hang off one host bridge. */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t *pathInfo)
{
    NVML_ENTER(nvmlDeviceGetTopologyCommonAncestor);
    int a = dev_index(device1), b = dev_index(device2);
    if (a < 0 || b < 0 || !pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    *pathInfo = a == b ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_HOSTBRIDGE;
    return NVML_SUCCESS;
}

/* Devices from one TESSEL_FAKE_GPUS entry ("4xA100:80G") are NVLink peers:
 * links 0 .. peers-1 are active.  A device alone in its entry has no NVLink
 * (NOT_SUPPORTED, as on a PCIe-only card). */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t *isActive)
{
    NVML_ENTER(nvmlDeviceGetNvLinkState);
    int i = dev_index(device);
    if (i < 0 || !isActive || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned peers = 0;
    for (int j = 0; j < n.ndev; j++)
        if (j != i && n.cfg.dev[j].group == n.cfg.dev[i].group)
            peers++;
    if (peers == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *isActive = link < peers ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

/* The far end of link k of device i: the k-th other device of its entry. */
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t *pci)
{
    NVML_ENTER(nvmlDeviceGetNvLinkRemotePciInfo_v2);
    int i = dev_index(device);
    if (i < 0 || !pci || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned peers = 0;
    for (int j = 0; j < n.ndev; j++) {
        if (j == i || n.cfg.dev[j].group != n.cfg.dev[i].group)
            continue;
        if (peers++ == link)
            return pci_info(&n.dev[j], pci);
    }
    return peers ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

/* Whether pid has exited: gone, or a zombie its parent has not reaped yet.  The real driver
 * frees a process's memory when the process exits (its device files close), not when it is
 * reaped, so NVML no longer lists a zombie. */
static int exited(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    tsl_procstat_t ps;
    if (tsl_procstat_read(pid, &ps) < 0)
        return errno == ENOENT;
    return ps.state == 'Z' || ps.state == 'X';
}

/* Processes holding a context on device i (live ones only, as the real driver lists them:
 * usedGpuMemory is what the process holds, its contexts included).  Fills at most cap entries
 * of pids/used; returns how many there are. */
static unsigned procs_of(int i, unsigned cap, unsigned *pids, unsigned long long *used)
{
    tfake_shared_t *s = state();
    unsigned k = 0;
    if (!s || i >= s->ndev)
        return 0;
    tfake_state_lock(s);
    for (int p = 0; p < TFAKE_MAX_PROCS; p++) {
        tfake_procstate_t *ps = &s->proc[p];
        if (ps->pid == 0 || ps->ctxs[i] == 0 || exited(ps->pid))
            continue;
        if (k < cap) {
            pids[k] = (unsigned)ps->pid;
            used[k] = ps->used[i] > ps->managed[i] ? ps->used[i] - ps->managed[i] : 0;
        }
        k++;
    }
    tfake_state_unlock(s);
    return k;
}

/* A GPU fallen off the bus (tests of callers' fault handling): while the file
 * TESSEL_FAKE_NVML_LOST_FILE exists and holds the index i, GPU i answers process queries
 * with NVML_ERROR_GPU_IS_LOST. */
static bool lost(int i)
{
    const char *path = getenv("TESSEL_FAKE_NVML_LOST_FILE");
    if (!path || !*path)
        return false;
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    int ix = -1;
    bool hit = fscanf(f, "%d", &ix) == 1 && ix == i;
    fclose(f);
    return hit;
}

#define PROCS_BODY(infos_type, fill_extra)                                                         \
    int i = dev_index(device);                                                                     \
    if (i < 0 || !infoCount)                                                                       \
        return NVML_ERROR_INVALID_ARGUMENT;                                                        \
    if (lost(i))                                                                                   \
        return NVML_ERROR_GPU_IS_LOST;                                                             \
    unsigned pids[TFAKE_MAX_PROCS];                                                                \
    unsigned long long used[TFAKE_MAX_PROCS];                                                      \
    unsigned k = procs_of(i, TFAKE_MAX_PROCS, pids, used);                                         \
    if (!infos || *infoCount < k) {                                                                \
        *infoCount = k;                                                                            \
        return k ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;                                    \
    }                                                                                              \
    for (unsigned j = 0; j < k; j++) {                                                             \
        infos_type *e = &infos[j];                                                                 \
        memset(e, 0, sizeof *e);                                                                   \
        e->pid = pids[j];                                                                          \
        e->usedGpuMemory = used[j];                                                                \
        fill_extra;                                                                                \
    }                                                                                              \
    *infoCount = k;                                                                                \
    return NVML_SUCCESS

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos)
{
    NVML_ENTER(nvmlDeviceGetComputeRunningProcesses);
    PROCS_BODY(nvmlProcessInfo_v1_t, (void)0);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    NVML_ENTER(nvmlDeviceGetComputeRunningProcesses_v2);
    PROCS_BODY(nvmlProcessInfo_t, e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    NVML_ENTER(nvmlDeviceGetComputeRunningProcesses_v3);
    PROCS_BODY(nvmlProcessInfo_t, e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu);
}

/* The r550+ list: mode 0 lists the compute processes as above; the fake has
 * no graphics contexts or MPS clients (modes 1 and 2: empty). */
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                   nvmlProcessDetailList_t *plist)
{
    NVML_ENTER(nvmlDeviceGetRunningProcessDetailList);
    if (!plist)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (plist->version != nvmlProcessDetailList_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (plist->mode > 2)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned *infoCount = &plist->numProcArrayEntries;
    nvmlProcessDetail_v1_t *infos = plist->procArray;
    if (plist->mode != 0) {
        *infoCount = 0;
        return NVML_SUCCESS;
    }
    PROCS_BODY(nvmlProcessDetail_v1_t, e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu);
}

/* fork: a child must not inherit the lock held by another thread. */
static void nvml_prepare(void)
{
    pthread_mutex_lock(&n.lock);
}

static void nvml_parent(void)
{
    pthread_mutex_unlock(&n.lock);
}

static void nvml_child(void)
{
    pthread_mutex_init(&n.lock, NULL);
}

__attribute__((constructor)) static void fake_nvml_init(void)
{
    pthread_atfork(nvml_prepare, nvml_parent, nvml_child);
}

/* ---- test hooks ------------------------------------------------------- */

unsigned long long tessel_fake_nvml_calls(const char *entry_point)
{
    if (!entry_point)
        return 0;
    for (int i = 0; i < NC_COUNT; i++)
        if (strcmp(nvml_names[i], entry_point) == 0)
            return __atomic_load_n(&nvml_calls[i], __ATOMIC_RELAXED);
    return 0;
}

void tessel_fake_nvml_reset_calls(void)
{
    for (int i = 0; i < NC_COUNT; i++)
        __atomic_store_n(&nvml_calls[i], 0, __ATOMIC_RELAXED);
}

/* At exit: append "entry_point count" lines to TESSEL_FAKE_CALLS_FILE, like
 * the fake libcuda ("%p" in the path becomes the pid), and unmap. */
__attribute__((destructor)) static void fake_nvml_fini(void)
{
    const char *path = getenv("TESSEL_FAKE_CALLS_FILE");
    if (path && *path) {
        char real[4096];
        size_t o = 0;
        for (const char *p = path; *p && o + 16 < sizeof real; p++) {
            if (p[0] == '%' && p[1] == 'p') {
                o += (size_t)snprintf(real + o, sizeof real - o, "%d", (int)getpid());
                p++;
            } else {
                real[o++] = *p;
            }
        }
        real[o] = '\0';
        char buf[64 * NC_COUNT];
        size_t len = 0;
        for (int i = 0; i < NC_COUNT; i++) {
            unsigned long long c = __atomic_load_n(&nvml_calls[i], __ATOMIC_RELAXED);
            if (c)
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s %llu\n", nvml_names[i], c);
        }
        FILE *f = len ? fopen(real, "a") : NULL;
        if (f) {
            fwrite(buf, 1, len, f);
            fclose(f);
        }
    }
    tfake_state_close(n.own);
    n.own = NULL;
}
