/* gpu.c - NVML discovery through dlopen, the memory a job's processes hold (what tesseld's
 * checkpoint measures: tagent_nvml_job_used), and the fake-GPU spec parser (see gpu.h).
 *
 * NVML comes from Tessel's own declarations (cudaabi/nvml_abi.h: Debian has no nvml.h).
 * Optional entry points (attributes, PCI, NVLink, utilisation) leave their figure unknown
 * when the library lacks them.  NVLink peers: an active link whose remote PCI bus id is one
 * of our GPUs' (nvmlDeviceGetNvLinkRemotePciInfo_v2).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpu.h"
#include "cudaabi/nvml_abi.h"
#include "libutil/size.h"

struct tagent_nvml {
    void *dl;
    nvmlInit_v2_fn init;
    nvmlShutdown_fn shutdown;
    nvmlDeviceGetCount_v2_fn count;
    nvmlDeviceGetHandleByIndex_v2_fn handle;
    nvmlDeviceGetName_fn name;
    nvmlDeviceGetUUID_fn uuid;
    nvmlDeviceGetMemoryInfo_fn memory;
    /* optional */
    nvmlErrorString_fn error_string;
    nvmlDeviceGetAttributes_v2_fn attributes;
    nvmlDeviceGetUtilizationRates_fn utilization;
    nvmlDeviceGetPciInfo_v3_fn pci;
    nvmlDeviceGetNvLinkState_fn nvlink_state;
    nvmlDeviceGetNvLinkRemotePciInfo_v2_fn nvlink_remote_pci;
    nvmlDeviceGetComputeRunningProcesses_v2_fn procs; /* _v3 or _v2: the same layout */
    nvmlDeviceGetComputeRunningProcesses_fn procs_v1;
};

static const char *nvml_err(tagent_nvml_t *n, int r)
{
    static char buf[32];
    if (n->error_string)
        return n->error_string((nvmlReturn_t)r);
    snprintf(buf, sizeof buf, "NVML error %d", r);
    return buf;
}

tagent_nvml_t *tagent_nvml_open(const char *lib, tsl_error_t *err)
{
    tagent_nvml_t *n = calloc(1, sizeof *n);
    if (!n) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl) {
        tsl_errprintf(err, "cannot load %s: %s", lib, dlerror());
        free(n);
        errno = ENOENT;
        return NULL;
    }
#define SYM(field, name) *(void **)(&n->field) = dlsym(n->dl, name)
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(name, "nvmlDeviceGetName");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(memory, "nvmlDeviceGetMemoryInfo");
    SYM(error_string, "nvmlErrorString");
    SYM(attributes, "nvmlDeviceGetAttributes_v2");
    SYM(utilization, "nvmlDeviceGetUtilizationRates");
    SYM(pci, "nvmlDeviceGetPciInfo_v3");
    SYM(nvlink_state, "nvmlDeviceGetNvLinkState");
    SYM(nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!n->procs)
        SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v2");
    SYM(procs_v1, "nvmlDeviceGetComputeRunningProcesses");
#undef SYM
    if (!n->init || !n->shutdown || !n->count || !n->handle || !n->name || !n->uuid || !n->memory) {
        tsl_errprintf(err, "%s lacks a required NVML entry point", lib);
        dlclose(n->dl);
        free(n);
        errno = ENOSYS;
        return NULL;
    }
    int r = n->init();
    if (r != 0) {
        tsl_errprintf(err, "nvmlInit: %s", nvml_err(n, r));
        dlclose(n->dl);
        free(n);
        errno = EIO;
        return NULL;
    }
    return n;
}

void tagent_nvml_close(tagent_nvml_t *n)
{
    if (!n)
        return;
    n->shutdown();
    dlclose(n->dl);
    free(n);
}

int tagent_uuid_parse(const char *text, unsigned char out[16])
{
    const char *p = text;
    if (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0)
        p += 4;
    int nb = 0;
    unsigned char tmp[16];
    while (*p && nb < 16) {
        if (*p == '-') {
            p++;
            continue;
        }
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
            return -1;
        char hex[3] = {p[0], p[1], 0};
        tmp[nb++] = (unsigned char)strtoul(hex, NULL, 16);
        p += 2;
    }
    if (nb != 16 || *p)
        return -1;
    memcpy(out, tmp, 16);
    return 0;
}

int tagent_nvml_inventory(tagent_nvml_t *n, tagent_gpu_t *gpus, int max, bool simulated,
                          tsl_error_t *err)
{
    unsigned count = 0;
    int r = n->count(&count);
    if (r != 0) {
        errno = EIO;
        return tsl_errprintf(err, "nvmlDeviceGetCount: %s", nvml_err(n, r));
    }
    if ((int)count > max) {
        errno = E2BIG;
        return tsl_errprintf(err, "%u GPUs found, tesseld manages at most %d", count, max);
    }
    nvmlDevice_t dev[TAGENT_MAX_GPUS];
    for (unsigned i = 0; i < count; i++) {
        tagent_gpu_t *g = &gpus[i];
        memset(g, 0, sizeof *g);
        g->index = (int)i;
        g->simulated = simulated;
        nvmlMemory_t mem;
        if ((r = n->handle(i, &dev[i])) != 0 || (r = n->name(dev[i], g->name, sizeof g->name)) ||
            (r = n->uuid(dev[i], g->uuid, sizeof g->uuid)) || (r = n->memory(dev[i], &mem))) {
            errno = EIO;
            return tsl_errprintf(err, "GPU %u: %s", i, nvml_err(n, r));
        }
        g->mem_total = mem.total;
        if (tagent_uuid_parse(g->uuid, g->uuid_bin) < 0)
            memset(g->uuid_bin, 0, sizeof g->uuid_bin);
        nvmlDeviceAttributes_t attr;
        if (n->attributes && n->attributes(dev[i], &attr) == 0)
            g->sm_count = attr.multiprocessorCount;
        nvmlPciInfo_t pci;
        if (n->pci && n->pci(dev[i], &pci) == 0)
            snprintf(g->bus_id, sizeof g->bus_id, "%s", pci.busId);
    }
    /* NVLink: an active link whose remote end has the PCI bus id of one of our GPUs. */
    if (n->nvlink_state && n->nvlink_remote_pci) {
        for (unsigned i = 0; i < count; i++) {
            for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
                nvmlEnableState_t active = NVML_FEATURE_DISABLED;
                nvmlPciInfo_t remote;
                if (n->nvlink_state(dev[i], link, &active) != 0 || !active ||
                    n->nvlink_remote_pci(dev[i], link, &remote) != 0)
                    continue;
                for (unsigned j = 0; j < count; j++)
                    if (j != i && gpus[j].bus_id[0] &&
                        strcasecmp(gpus[j].bus_id, remote.busId) == 0)
                        gpus[i].nvlink_peers |= 1u << j;
            }
        }
    }
    return (int)count;
}

int tagent_nvml_utilization(tagent_nvml_t *n, int index)
{
    nvmlDevice_t dev;
    nvmlUtilization_t u;
    if (!n || !n->utilization || n->handle((unsigned)index, &dev) != 0 ||
        n->utilization(dev, &u) != 0)
        return -1;
    return (int)u.gpu;
}

int tagent_nvml_memory(tagent_nvml_t *n, int index, uint64_t *total, uint64_t *used,
                       uint64_t *free_bytes)
{
    nvmlDevice_t dev;
    nvmlMemory_t m;
    if (!n || !n->memory || n->handle((unsigned)index, &dev) != 0 || n->memory(dev, &m) != 0)
        return -1;
    *total = m.total;
    *used = m.used;
    *free_bytes = m.free;
    return 0;
}

/* NVML's "not available" for a process's memory (all ones: the driver does not know). */
#define NVML_VALUE_UNKNOWN 0xFFFFFFFFFFFFFFFFull

/* The compute processes on GPU index: into pids/used (cap entries); how many, or -1 (NVML
 * cannot say, or more than cap). */
static int gpu_procs(tagent_nvml_t *n, int index, unsigned *pids, uint64_t *used, unsigned cap)
{
    nvmlDevice_t dev;
    if (!n->procs && !n->procs_v1)
        return -1;
    if (n->handle((unsigned)index, &dev) != 0)
        return -1;
    unsigned k = cap;
    if (n->procs) {
        nvmlProcessInfo_t *info = calloc(cap ? cap : 1, sizeof *info);
        if (!info || n->procs(dev, &k, info) != 0) {
            free(info);
            return -1;
        }
        for (unsigned i = 0; i < k; i++) {
            pids[i] = info[i].pid;
            used[i] = info[i].usedGpuMemory;
        }
        free(info);
    } else {
        nvmlProcessInfo_v1_t *info = calloc(cap ? cap : 1, sizeof *info);
        if (!info || n->procs_v1(dev, &k, info) != 0) {
            free(info);
            return -1;
        }
        for (unsigned i = 0; i < k; i++) {
            pids[i] = info[i].pid;
            used[i] = info[i].usedGpuMemory;
        }
        free(info);
    }
    return (int)k;
}

uint64_t tagent_procs_sum(const unsigned *pids, const uint64_t *used, size_t n, const pid_t *of,
                          size_t nof, bool *unknown)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        bool member = false;
        for (size_t j = 0; j < nof && !member; j++)
            member = of[j] > 0 && (unsigned)of[j] == pids[i];
        if (!member)
            continue;
        if (used[i] == NVML_VALUE_UNKNOWN) {
            if (unknown)
                *unknown = true;
            continue;
        }
        sum = used[i] > UINT64_MAX - sum ? UINT64_MAX : sum + used[i];
    }
    return sum;
}

int tagent_nvml_job_used(tagent_nvml_t *n, const unsigned *gpus, size_t ngpus, const pid_t *pids,
                         size_t npids, uint64_t *sum)
{
    *sum = 0;
    if (!n || ngpus == 0) {
        errno = ENODEV;
        return -1;
    }
    unsigned *p = malloc(TAGENT_NVML_MAX_PROCS * sizeof *p);
    uint64_t *u = malloc(TAGENT_NVML_MAX_PROCS * sizeof *u);
    int rc = 0;
    for (size_t g = 0; p && u && g < ngpus; g++) {
        int k = gpu_procs(n, (int)gpus[g], p, u, TAGENT_NVML_MAX_PROCS);
        bool unknown = false;
        uint64_t s = k < 0 ? 0 : tagent_procs_sum(p, u, (size_t)k, pids, npids, &unknown);
        if (k < 0 || unknown) {
            rc = -1;
            break;
        }
        *sum = s > UINT64_MAX - *sum ? UINT64_MAX : *sum + s;
    }
    if (!p || !u)
        rc = -1;
    free(p);
    free(u);
    if (rc < 0) {
        *sum = 0;
        errno = EIO;
    }
    return rc;
}

int tagent_fake_spec_parse(const char *spec, tagent_gpu_t *gpus, int max, tsl_error_t *err)
{
    int n = 0;
    const char *p = spec;
    if (!spec || !*spec) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty GPU spec (expected e.g. 2xRTX4090:24G)");
    }
    while (*p) {
        const char *end = strchrnul(p, ',');
        char item[128];
        size_t len = (size_t)(end - p);
        if (len == 0 || len >= sizeof item) {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': bad GPU spec item", spec);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        long count = 1;
        char *name = item;
        char *x = strchr(item, 'x');
        if (x && x > item) {
            char *q = item;
            while (q < x && isdigit((unsigned char)*q))
                q++;
            if (q == x) {
                count = strtol(item, NULL, 10);
                name = x + 1;
            }
        }
        char *colon = strchr(name, ':');
        if (!colon || colon == name || count < 1) {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': expected [Nx]NAME:MEM[:SMS], e.g. 2xRTX4090:24G",
                                 item);
        }
        *colon = '\0';
        char *memtext = colon + 1;
        unsigned long sms = 0;
        char *colon2 = strchr(memtext, ':');
        if (colon2) {
            *colon2 = '\0';
            char *e;
            sms = strtoul(colon2 + 1, &e, 10);
            if (*e || sms == 0 || sms > 100000) {
                errno = EINVAL;
                return tsl_errprintf(err, "'%s': SM count must be 1..100000", item);
            }
        }
        uint64_t mem = 0;
        tsl_error_t serr;
        if (tsl_parse_size(memtext, &mem, &serr) < 0 || mem == 0) {
            errno = EINVAL;
            return tsl_errprintf(err, "GPU spec '%s': memory: %s", spec,
                                 mem == 0 && *memtext && isdigit((unsigned char)*memtext)
                                     ? "must be above 0"
                                     : serr.text);
        }
        for (long i = 0; i < count; i++) {
            if (n >= max) {
                errno = E2BIG;
                return tsl_errprintf(err, "more than %d GPUs in '%s'", max, spec);
            }
            tagent_gpu_t *g = &gpus[n];
            memset(g, 0, sizeof *g);
            g->index = n;
            g->simulated = true;
            g->mem_total = mem;
            g->sm_count = (unsigned)sms;
            snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, name);
            for (int b = 0; b < 16; b++)
                g->uuid_bin[b] = (unsigned char)(b == 15 ? n : 0x7e);
            snprintf(g->uuid, sizeof g->uuid, "GPU-7e7e7e7e-7e7e-7e7e-7e7e-7e7e7e7e7e%02x",
                     (unsigned)n);
            n++;
        }
        p = *end ? end + 1 : end;
    }
    return n;
}
