/* nvml.c - NVML's memory view of a slice (nvidia-smi, NVML-based tools).
 *
 * NVML numbers devices on its own (by PCI bus id, ignoring
 * CUDA_VISIBLE_DEVICES), so a device is matched to the slice by UUID: the
 * CUDA devices this process can see are registered in the slice file first
 * (through the real driver, initialised if the program never did), then the
 * NVML device's UUID is looked up among the slice's devices.  A device that
 * is not part of the slice keeps NVML's own figures.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "interposer/interposer.h"

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static pthread_once_t cuda_devs_once = PTHREAD_ONCE_INIT;

static void nvml_open(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    tcu_symbols_resolve(NULL, h);
    if (TCU_REAL(nvmlInit_v2))
        TCU_REAL(nvmlInit_v2)();
    tcu.nvml = h;
}

void *tcu_nvml_handle(void)
{
    pthread_once(&nvml_once, nvml_open);
    return tcu.nvml;
}

/* Register every CUDA device the process sees in the slice. */
static void cuda_devs_register(void)
{
    cuDeviceGetCount_fn count = TCU_REAL(cuDeviceGetCount);
    int n = 0;
    if (!count)
        return;
    CUresult r = count(&n);
    if (r == CUDA_ERROR_NOT_INITIALIZED && TCU_REAL(cuInit) && TCU_REAL(cuInit)(0) == CUDA_SUCCESS)
        r = count(&n);
    if (r != CUDA_SUCCESS)
        return;
    for (int i = 0; i < n && i < TCU_MAX_DEVICES; i++)
        tcu_dev(i);
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
    pthread_once(&cuda_devs_once, cuda_devs_register);
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
    return 0;
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
