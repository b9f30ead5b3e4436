/* nvml_abi.h - the subset of the NVML ABI (libnvidia-ml.so.1) that Tessel needs.
 *
 * Tessel's own declarations (no nvml.h on Debian): values, struct layouts and
 * signatures match the NVML shipped with CUDA 12/13 drivers on LP64 Linux.
 * Used by tesseld / the agent for GPU discovery (through dlopen, so every
 * entry point also gets a `name_fn` pointer type) and by the fake
 * libnvidia-ml.so.1 in tests/fake.  Like cuda_abi.h there are no renaming
 * macros: `nvmlInit` and `nvmlInit_v2` are distinct exported symbols.
 */
#ifndef TESSEL_CUDAABI_NVML_ABI_H
#define TESSEL_CUDAABI_NVML_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

/* Buffer sizes the API documents for string outputs. */
#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS                  18

/* Versioned structs carry sizeof | version << 24 in their first field. */
#define NVML_STRUCT_VERSION(data, ver)                                                             \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

/* nvmlInitWithFlags flags */
#define NVML_INIT_FLAG_NO_GPUS   1
#define NVML_INIT_FLAG_NO_ATTACH 2

typedef struct nvmlMemory_st {
    unsigned long long total; /* bytes */
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version; /* set to nvmlMemory_v2 by the caller */
    unsigned long long total;
    unsigned long long reserved; /* set aside by the driver, in neither free nor used */
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

/* Layout of nvmlDeviceGetPciInfo_v2/_v3 (68 bytes). */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:01:00.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId; /* device id << 16 | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:01:00.0" */
} nvmlPciInfo_t;

/* Layout of the legacy unversioned nvmlDeviceGetPciInfo. */
typedef struct nvmlPciInfo_v1_st {
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfo_v1_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of the sample period a kernel was running */
    unsigned int memory; /* percent of the period device memory was read or written */
} nvmlUtilization_t;

/* nvmlDeviceGetComputeRunningProcesses (unversioned) */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* nvmlDeviceGetComputeRunningProcesses_v2 and _v3 (24 bytes) */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;     /* 0xFFFFFFFF without MIG */
    unsigned int computeInstanceId; /* 0xFFFFFFFF without MIG */
} nvmlProcessInfo_t;

/* nvmlDeviceGetRunningProcessDetailList (r550+; what newer tools read). */
typedef struct nvmlProcessDetail_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

typedef struct nvmlProcessDetailList_v1_st {
    unsigned int version;             /* nvmlProcessDetailList_v1 */
    unsigned int mode;                /* 0 compute, 1 graphics, 2 MPS compute */
    unsigned int numProcArrayEntries; /* in: room in procArray; out: written or needed */
    nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;
typedef nvmlProcessDetailList_v1_t nvmlProcessDetailList_t;
/* NVML_STRUCT_VERSION: the structure's size | version << 24 */
#define nvmlProcessDetailList_v1 ((unsigned int)(sizeof(nvmlProcessDetailList_v1_t) | (1u << 24)))

/* nvmlDeviceGetAttributes_v2: gives the SM count */
typedef struct nvmlDeviceAttributes_st {
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef enum nvmlGpuLevel_enum {
    NVML_TOPOLOGY_INTERNAL = 0,
    NVML_TOPOLOGY_SINGLE = 10,
    NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30,
    NVML_TOPOLOGY_NODE = 40,
    NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

/* NVMLABI_FN(ret, name, params): prototype plus pointer type `name_fn`. */
#define NVMLABI_FN(ret, name, params)                                                              \
    ret name params;                                                                               \
    typedef ret(*name##_fn) params

NVMLABI_FN(nvmlReturn_t, nvmlInit, (void));
NVMLABI_FN(nvmlReturn_t, nvmlInit_v2, (void));
NVMLABI_FN(nvmlReturn_t, nvmlInitWithFlags, (unsigned int flags));
NVMLABI_FN(nvmlReturn_t, nvmlShutdown, (void));
NVMLABI_FN(const char *, nvmlErrorString, (nvmlReturn_t result));
NVMLABI_FN(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int length));
NVMLABI_FN(nvmlReturn_t, nvmlSystemGetCudaDriverVersion, (int *cudaDriverVersion));
NVMLABI_FN(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int *cudaDriverVersion));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetCount, (unsigned int *deviceCount));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *deviceCount));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetHandleByPciBusId,
           (const char *pciBusId, nvmlDevice_t *device));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetHandleByPciBusId_v2,
           (const char *pciBusId, nvmlDevice_t *device));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int *index));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2,
           (nvmlDevice_t device, nvmlMemory_v2_t *memory));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfo_v1_t *pci));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t *pci));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t *pci));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetUtilizationRates,
           (nvmlDevice_t device, nvmlUtilization_t *utilization));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetNumGpuCores, (nvmlDevice_t device, unsigned int *numCores));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetAttributes_v2,
           (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetTopologyCommonAncestor,
           (nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t *pathInfo));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetNvLinkState,
           (nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive));
/* PCI info of the device at the far end of NVLink `link`. */
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetNvLinkRemotePciInfo_v2,
           (nvmlDevice_t, unsigned int, nvmlPciInfo_t *));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v2,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetRunningProcessDetailList,
           (nvmlDevice_t device, nvmlProcessDetailList_t *plist));
/* The same lists for graphics contexts and MPS clients (same structures). */
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v2,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v3,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses_v2,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));
NVMLABI_FN(nvmlReturn_t, nvmlDeviceGetMPSComputeRunningProcesses_v3,
           (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos));

#ifdef __cplusplus
}
#endif

#endif
