/* cuda_abi.h - the subset of the CUDA driver API ABI that Tessel needs.
 *
 * Tessel's own declarations (Debian ships no CUDA headers): the numeric values,
 * struct layouts and signatures below match the CUDA 13.0 driver ABI on LP64
 * Linux, so that the interposer (src/interposer), the daemon's discovery code
 * and the test double of the driver (tests/fake) can be compiled without the
 * CUDA toolkit.  Only what Tessel hooks, calls or fakes is declared.
 *
 * Naming: every entry point `cuX` is declared as a prototype and gets a
 * function-pointer type `cuX_fn` with the same signature, e.g.
 *     cuMemAlloc_v2_fn real = (cuMemAlloc_v2_fn)dlsym(h, "cuMemAlloc_v2");
 * Versioned exports are declared under their exported symbol names: the
 * driver exports both `cuMemAlloc` (legacy, 32-bit sizes) and `cuMemAlloc_v2`;
 * `_ptds` / `_ptsz` are the per-thread-default-stream variants.  Unlike
 * cuda.h, there are NO macros mapping `cuMemAlloc` to `cuMemAlloc_v2`: the
 * name you write is the symbol you get.
 *
 * Included by: src/interposer, src/agent (discovery), tests/fake.  Keep this
 * header free of anything Tessel-specific beyond the CUABI_ prefix.
 */
#ifndef TESSEL_CUDAABI_CUDA_ABI_H
#define TESSEL_CUDAABI_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Value of CUDA_VERSION in the toolkit these declarations follow, and what a
 * 13.0 driver's cuDriverGetVersion reports. */
#define CUABI_CUDA_VERSION 13000

/* ---- Results ------------------------------------------------------------ */

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_PROFILER_DISABLED = 5,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_DEVICE_NOT_LICENSED = 102,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_UNMAP_FAILED = 206,
    CUDA_ERROR_ARRAY_IS_MAPPED = 207,
    CUDA_ERROR_ALREADY_MAPPED = 208,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_ALREADY_ACQUIRED = 210,
    CUDA_ERROR_NOT_MAPPED = 211,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_UNSUPPORTED_LIMIT = 215,
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE = 216,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_SOURCE = 300,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_LOSSY_QUERY = 402,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_NOT_READY = 802,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
    CUDA_ERROR_CAPTURED_EVENT = 907,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
    CUDA_ERROR_TIMEOUT = 909,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* ---- Scalars and handles ------------------------------------------------ */

typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef int CUdevice; /* ordinal, 0 .. count-1 */
typedef int CUdevice_v1;
typedef unsigned long long CUdeviceptr; /* 64-bit device address (CUdeviceptr_v2) */
typedef unsigned long long CUdeviceptr_v2;
typedef unsigned int CUdeviceptr_v1; /* legacy 32-bit pointer of the unversioned exports */
typedef unsigned long long CUmemGenericAllocationHandle;

/* Opaque handles: pointers to incomplete structs, as in the driver ABI. */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;

/* The two special stream handles (besides NULL, the default stream). */
#define CU_STREAM_LEGACY     ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

/* ---- Flags -------------------------------------------------------------- */

typedef enum CUlimit_enum {
    CU_LIMIT_STACK_SIZE = 0x00,
    CU_LIMIT_PRINTF_FIFO_SIZE = 0x01,
    CU_LIMIT_MALLOC_HEAP_SIZE = 0x02,
    CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH = 0x03,
    CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT = 0x04,
    CU_LIMIT_MAX_L2_FETCH_GRANULARITY = 0x05,
    CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
} CUlimit;

typedef enum CUctx_flags_enum {
    CU_CTX_SCHED_AUTO = 0x00,
    CU_CTX_SCHED_SPIN = 0x01,
    CU_CTX_SCHED_YIELD = 0x02,
    CU_CTX_SCHED_BLOCKING_SYNC = 0x04,
    CU_CTX_SCHED_MASK = 0x07,
    CU_CTX_MAP_HOST = 0x08,
    CU_CTX_LMEM_RESIZE_TO_MAX = 0x10,
    CU_CTX_COREDUMP_ENABLE = 0x20,
    CU_CTX_USER_COREDUMP_ENABLE = 0x40,
    CU_CTX_SYNC_MEMOPS = 0x80,
    CU_CTX_FLAGS_MASK = 0xFF
} CUctx_flags;

typedef enum CUstream_flags_enum {
    CU_STREAM_DEFAULT = 0x0,
    CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;

typedef enum CUevent_flags_enum {
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_BLOCKING_SYNC = 0x1,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_EVENT_INTERPROCESS = 0x4
} CUevent_flags;

typedef enum CUmemAttach_flags_enum {
    CU_MEM_ATTACH_GLOBAL = 0x1,
    CU_MEM_ATTACH_HOST = 0x2,
    CU_MEM_ATTACH_SINGLE = 0x4
} CUmemAttach_flags;

#define CU_MEMHOSTALLOC_PORTABLE      0x01
#define CU_MEMHOSTALLOC_DEVICEMAP     0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEMHOSTREGISTER_PORTABLE   0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP  0x02

typedef enum CUmemorytype_enum {
    CU_MEMORYTYPE_HOST = 0x01,
    CU_MEMORYTYPE_DEVICE = 0x02,
    CU_MEMORYTYPE_ARRAY = 0x03,
    CU_MEMORYTYPE_UNIFIED = 0x04
} CUmemorytype;

typedef enum CUmem_advise_enum {
    CU_MEM_ADVISE_SET_READ_MOSTLY = 1,
    CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2,
    CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3,
    CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4,
    CU_MEM_ADVISE_SET_ACCESSED_BY = 5,
    CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6
} CUmem_advise;

/* The host as a "device" in cuMemAdvise / cuMemPrefetchAsync (v1). */
#define CU_DEVICE_CPU ((CUdevice)-1)

/* cuGetProcAddress flags and outcome. */
typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* Checkpointing (cuCheckpointProcess*, CUDA 12.8 = driver r570 and later): the state of a
 * CUDA process as another process drives it, and the optional arguments of each step. */
typedef enum CUprocessState_enum {
    CU_PROCESS_STATE_RUNNING = 0,  /* CUDA calls proceed */
    CU_PROCESS_STATE_LOCKED,       /* CUDA calls block */
    CU_PROCESS_STATE_CHECKPOINTED, /* device memory copied to host and released */
    CU_PROCESS_STATE_FAILED        /* an uncorrectable error during checkpoint or restore */
} CUprocessState;

typedef struct CUcheckpointLockArgs_st {
    unsigned int timeoutMs;  /* 0: no timeout */
    unsigned int reserved0;  /* must be zero */
    cuuint64_t reserved1[7]; /* must be zero */
} CUcheckpointLockArgs;

typedef struct CUcheckpointCheckpointArgs_st {
    cuuint64_t reserved[8]; /* must be zero */
} CUcheckpointCheckpointArgs;

typedef struct CUcheckpointGpuPair_st {
    CUuuid oldUuid; /* GPU that was checkpointed */
    CUuuid newUuid; /* GPU to restore onto */
} CUcheckpointGpuPair;

typedef struct CUcheckpointRestoreArgs_st {
    CUcheckpointGpuPair *gpuPairs; /* remapping of GPUs at restore, NULL: none */
    unsigned int gpuPairsCount;
    char reserved[52 - sizeof(CUcheckpointGpuPair *)]; /* must be zero */
    cuuint64_t reserved1;                              /* must be zero */
} CUcheckpointRestoreArgs;

typedef struct CUcheckpointUnlockArgs_st {
    cuuint64_t reserved[8]; /* must be zero */
} CUcheckpointUnlockArgs;

/* ---- Device attributes (the ones Tessel reads or fakes) ------------------ */

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH = 11,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT = 14,
    CU_DEVICE_ATTRIBUTE_GPU_OVERLAP = 15,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT = 17,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER = 35,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT = 51,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED = 78,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED = 90,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH = 96,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119,
    CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 133,
    CU_DEVICE_ATTRIBUTE_MAX = 148
} CUdevice_attribute;

/* Pointer attributes (cuPointerGetAttribute(s)); the values of cuda.h 13.0, those used here. */
typedef enum CUpointer_attribute_enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
    CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_POINTER_ATTRIBUTE_MAPPED = 13,
    CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE = 21
} CUpointer_attribute;

/* Function attributes (cuFuncGetAttribute); cuda.h 13.0's values, the first few. */
typedef enum CUfunction_attribute_enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
    CU_FUNC_ATTRIBUTE_MAX = 20
} CUfunction_attribute;

/* ---- Arrays ------------------------------------------------------------- */

typedef enum CUarray_format_enum {
    CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
    CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
    CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
    CU_AD_FORMAT_SIGNED_INT8 = 0x08,
    CU_AD_FORMAT_SIGNED_INT16 = 0x09,
    CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
    CU_AD_FORMAT_HALF = 0x10,
    CU_AD_FORMAT_FLOAT = 0x20,
    CU_AD_FORMAT_UNORM_INT_101010_2 = 0x50,
    CU_AD_FORMAT_BC1_UNORM = 0x91,
    CU_AD_FORMAT_BC7_UNORM_SRGB = 0x9e,
    CU_AD_FORMAT_NV12 = 0xb0,
    CU_AD_FORMAT_UNORM_INT8X1 = 0xc0,
    CU_AD_FORMAT_UNORM_INT8X2 = 0xc1,
    CU_AD_FORMAT_UNORM_INT8X4 = 0xc2,
    CU_AD_FORMAT_UNORM_INT16X1 = 0xc3,
    CU_AD_FORMAT_UNORM_INT16X2 = 0xc4,
    CU_AD_FORMAT_UNORM_INT16X4 = 0xc5,
    CU_AD_FORMAT_SNORM_INT8X1 = 0xc6,
    CU_AD_FORMAT_SNORM_INT8X2 = 0xc7,
    CU_AD_FORMAT_SNORM_INT8X4 = 0xc8,
    CU_AD_FORMAT_SNORM_INT16X1 = 0xc9,
    CU_AD_FORMAT_SNORM_INT16X2 = 0xca,
    CU_AD_FORMAT_SNORM_INT16X4 = 0xcb,
    CU_AD_FORMAT_MAX = 0x7FFFFFFF
} CUarray_format;

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
    size_t Width;
    size_t Height;
    CUarray_format Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
    size_t Width;
    size_t Height;
    size_t Depth;
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags; /* CUDA_ARRAY3D_* */
} CUDA_ARRAY3D_DESCRIPTOR;

/* Layouts taken by the legacy unversioned cuArrayCreate / cuArray3DCreate. */
typedef struct CUDA_ARRAY_DESCRIPTOR_v1_st {
    unsigned int Width;
    unsigned int Height;
    CUarray_format Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v1;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_v1_st {
    unsigned int Width;
    unsigned int Height;
    unsigned int Depth;
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR_v1;

#define CUDA_ARRAY3D_LAYERED          0x01
#define CUDA_ARRAY3D_SURFACE_LDST     0x02
#define CUDA_ARRAY3D_CUBEMAP          0x04
#define CUDA_ARRAY3D_TEXTURE_GATHER   0x08
#define CUDA_ARRAY3D_SPARSE           0x40
#define CUDA_ARRAY3D_DEFERRED_MAPPING 0x80

/* cuMemcpy2D*_v2 parameters (the _v2 layout, size_t fields). */
typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes;
    size_t srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
} CUDA_MEMCPY2D;

/* cuMemcpy3D_v2's parameters (CUDA_MEMCPY3D_v2 of cuda.h 13.0): Depth slices of Height rows
 * of WidthInBytes bytes; each side's rows Pitch apart, its slices Pitch * Height apart. */
typedef struct CUDA_MEMCPY3D_st {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    void *reserved0; /* must be NULL */
    size_t srcPitch;
    size_t srcHeight;
    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    void *reserved1; /* must be NULL */
    size_t dstPitch;
    size_t dstHeight;
    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
} CUDA_MEMCPY3D;

/* cuMemcpy3DPeer(Async)'s parameters (CUDA_MEMCPY3D_PEER_v1 of cuda.h 13.0): a 3D copy whose
 * device sides each name their context (ignored for an array). */
typedef struct CUDA_MEMCPY3D_PEER_st {
    size_t srcXInBytes;
    size_t srcY;
    size_t srcZ;
    size_t srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    CUcontext srcContext;
    size_t srcPitch;
    size_t srcHeight;
    size_t dstXInBytes;
    size_t dstY;
    size_t dstZ;
    size_t dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    CUcontext dstContext;
    size_t dstPitch;
    size_t dstHeight;
    size_t WidthInBytes;
    size_t Height;
    size_t Depth;
} CUDA_MEMCPY3D_PEER;

/* The v1 (pre-3.2) layouts of cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy2DAsync, cuMemcpy3D and
 * cuMemcpy3DAsync: the same fields with 32-bit offsets, sizes and device pointers. */
typedef struct CUDA_MEMCPY2D_v1_st {
    unsigned int srcXInBytes;
    unsigned int srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr_v1 srcDevice;
    CUarray srcArray;
    unsigned int srcPitch;
    unsigned int dstXInBytes;
    unsigned int dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr_v1 dstDevice;
    CUarray dstArray;
    unsigned int dstPitch;
    unsigned int WidthInBytes;
    unsigned int Height;
} CUDA_MEMCPY2D_v1;

typedef struct CUDA_MEMCPY3D_v1_st {
    unsigned int srcXInBytes;
    unsigned int srcY;
    unsigned int srcZ;
    unsigned int srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr_v1 srcDevice;
    CUarray srcArray;
    void *reserved0; /* must be NULL */
    unsigned int srcPitch;
    unsigned int srcHeight;
    unsigned int dstXInBytes;
    unsigned int dstY;
    unsigned int dstZ;
    unsigned int dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr_v1 dstDevice;
    CUarray dstArray;
    void *reserved1; /* must be NULL */
    unsigned int dstPitch;
    unsigned int dstHeight;
    unsigned int WidthInBytes;
    unsigned int Height;
    unsigned int Depth;
} CUDA_MEMCPY3D_v1;

/* ---- Virtual memory management and pools -------------------------------- */

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    CU_MEM_LOCATION_TYPE_HOST = 0x2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
    CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
    CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
    CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
    CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
    CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
    CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;

typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
    CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;

typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id; /* device ordinal when type is DEVICE */
} CUmemLocation;

/* cuMemcpyBatchAsync (CUDA 12.8; _v2 in 13.0, without failIdx): the attributes of a run of the
 * batch's copies, from attrsIdxs[k] to the next entry's first. */
typedef enum CUmemcpySrcAccessOrder_enum {
    CU_MEMCPY_SRC_ACCESS_ORDER_INVALID = 0x0,
    CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 0x1,
    CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL = 0x2,
    CU_MEMCPY_SRC_ACCESS_ORDER_ANY = 0x3,
    CU_MEMCPY_SRC_ACCESS_ORDER_MAX = 0x7FFFFFFF
} CUmemcpySrcAccessOrder;

typedef enum CUmemcpyFlags_enum {
    CU_MEMCPY_FLAG_DEFAULT = 0x0,
    CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE = 0x1
} CUmemcpyFlags;

typedef struct CUmemcpyAttributes_st {
    CUmemcpySrcAccessOrder srcAccessOrder;
    CUmemLocation srcLocHint; /* managed or pageable memory only; else ignored */
    CUmemLocation dstLocHint;
    unsigned int flags; /* CUmemcpyFlags */
} CUmemcpyAttributes;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize; /* 0: no limit beyond the device */
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

/* Values are cuuint64_t for RELEASE_THRESHOLD and the *_MEM_* attributes,
 * int for the REUSE_* ones. */
typedef enum CUmemPool_attribute_enum {
    CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
    CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
    CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8
} CUmemPool_attribute;

/* ---- Contexts ----------------------------------------------------------- */

typedef enum CUexecAffinityType_enum {
    CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
    CU_EXEC_AFFINITY_TYPE_MAX
} CUexecAffinityType;

typedef struct CUexecAffinityParam_st {
    CUexecAffinityType type;
    union {
        struct {
            unsigned int val;
        } smCount;
    } param;
} CUexecAffinityParam;

typedef struct CUctxCigParam_st {
    int sharedDataType; /* CUcigDataType */
    void *sharedData;
} CUctxCigParam;

typedef struct CUctxCreateParams_st {
    CUexecAffinityParam *execAffinityParams;
    int numExecAffinityParams;
    CUctxCigParam *cigParams;
} CUctxCreateParams;

/* ---- Launch ------------------------------------------------------------- */

typedef enum CUlaunchAttributeID_enum {
    CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
    CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
    CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
    CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = 9,
    CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN = 10,
    CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION = 11,
    CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12,
    CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE = 13
} CUlaunchAttributeID;

/* 64 bytes, 8-byte aligned (the ABI union holds pointers). */
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    int cooperative;
    int priority;
    struct {
        unsigned int x, y, z;
    } clusterDim;
    struct {
        CUevent event;
        int flags;
        int triggerAtBlockStart;
    } programmaticEvent;
    unsigned long long align_;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs; /* may be NULL when numAttrs == 0 */
    unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUDA_LAUNCH_PARAMS_st {
    CUfunction function;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    void **kernelParams;
} CUDA_LAUNCH_PARAMS;

#define CU_LAUNCH_PARAM_END            ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE    ((void *)0x02)

/* ---- Stream memory operations, host functions ------------------------------
 * cuStreamWriteValue32/64, cuStreamWaitValue32/64 and cuStreamBatchMemOp: a 32- or 64-bit word
 * of device memory written, or waited for, in stream order (cuda.h 13.0; the _v2 exports of
 * CUDA 11.7 are what cuda.h's names stand for; the unversioned ones are the CUDA 8/9 exports). */
typedef enum CUstreamWaitValue_flags_enum {
    CU_STREAM_WAIT_VALUE_GEQ = 0x0, /* (int32_t)(*addr - value) >= 0 (int64_t for 64 bits) */
    CU_STREAM_WAIT_VALUE_EQ = 0x1,  /* *addr == value */
    CU_STREAM_WAIT_VALUE_AND = 0x2, /* (*addr & value) != 0 */
    CU_STREAM_WAIT_VALUE_NOR = 0x3, /* ~(*addr | value) != 0 */
    CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
} CUstreamWaitValue_flags;

typedef enum CUstreamWriteValue_flags_enum {
    CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
    CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 0x1 /* v1 only */
} CUstreamWriteValue_flags;

typedef enum CUstreamBatchMemOpType_enum {
    CU_STREAM_MEM_OP_WAIT_VALUE_32 = 1,
    CU_STREAM_MEM_OP_WRITE_VALUE_32 = 2,
    CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES = 3,
    CU_STREAM_MEM_OP_WAIT_VALUE_64 = 4,
    CU_STREAM_MEM_OP_WRITE_VALUE_64 = 5,
    CU_STREAM_MEM_OP_BARRIER = 6 /* _v2 only */
} CUstreamBatchMemOpType;

/* One operation of cuStreamBatchMemOp: 48 bytes, `operation` first in every member. */
typedef union CUstreamBatchMemOpParams_union {
    CUstreamBatchMemOpType operation;
    struct CUstreamMemOpWaitValueParams_st {
        CUstreamBatchMemOpType operation;
        CUdeviceptr address;
        union {
            cuuint32_t value;
            cuuint64_t value64;
        };
        unsigned int flags; /* CUstreamWaitValue_flags */
        CUdeviceptr alias;  /* the driver's */
    } waitValue;
    struct CUstreamMemOpWriteValueParams_st {
        CUstreamBatchMemOpType operation;
        CUdeviceptr address;
        union {
            cuuint32_t value;
            cuuint64_t value64;
        };
        unsigned int flags; /* CUstreamWriteValue_flags */
        CUdeviceptr alias;
    } writeValue;
    struct CUstreamMemOpFlushRemoteWritesParams_st {
        CUstreamBatchMemOpType operation;
        unsigned int flags; /* 0 */
    } flushRemoteWrites;
    struct CUstreamMemOpMemoryBarrierParams_st {
        CUstreamBatchMemOpType operation;
        unsigned int flags; /* CU_STREAM_MEMORY_BARRIER_TYPE_SYS 0, _GPU 1 */
    } memoryBarrier;
    cuuint64_t pad[6];
} CUstreamBatchMemOpParams;

/* Host functions enqueued on a stream (cuLaunchHostFunc) and stream callbacks
 * (cuStreamAddCallback, flags 0): called once the stream's earlier work is done. */
typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);

/* ---- Graphs and stream capture ------------------------------------------ */

typedef enum CUstreamCaptureStatus_enum {
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

/* An edge's data (cuStreamGetCaptureInfo_v3): ports and type, 0 = full completion. */
typedef struct CUgraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} CUgraphEdgeData;

typedef struct CUDA_KERNEL_NODE_PARAMS_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUkernel kern;         /* used when func is NULL */
    CUcontext ctx;         /* NULL: the current context */
} CUDA_KERNEL_NODE_PARAMS; /* the _v2 layout, taken by cuGraphAddKernelNode_v2 */

/* cuGraphInstantiateWithParams (CUDA 12.0): flags as cuGraphInstantiateWithFlags' (UPLOAD: the
 * graph uploaded to hUploadStream once made), and what went wrong, if anything. */
typedef enum CUgraphInstantiateResult_enum {
    CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
    CUDA_GRAPH_INSTANTIATE_ERROR = 1,
    CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
    CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
    CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4,
    CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED = 5
} CUgraphInstantiateResult;

typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
    cuuint64_t flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* ---- Entry points -------------------------------------------------------
 * CUABI_FN(name, params) declares `CUresult name params;` and the pointer
 * type `name_fn`.  Grouped as in the driver documentation. */

#define CUABI_FN(name, params)                                                                     \
    CUresult name params;                                                                          \
    typedef CUresult(*name##_fn) params

/* Errors, init, version, entry-point lookup */
CUABI_FN(cuGetErrorString, (CUresult error, const char **pStr));
CUABI_FN(cuGetErrorName, (CUresult error, const char **pStr));
CUABI_FN(cuInit, (unsigned int Flags));
CUABI_FN(cuDriverGetVersion, (int *driverVersion));
CUABI_FN(cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId));
CUABI_FN(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags));
CUABI_FN(cuGetProcAddress_v2, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *symbolStatus));

/* Devices */
CUABI_FN(cuDeviceGet, (CUdevice * device, int ordinal));
CUABI_FN(cuDeviceGetCount, (int *count));
CUABI_FN(cuDeviceGetName, (char *name, int len, CUdevice dev));
CUABI_FN(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev));
CUABI_FN(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev));
CUABI_FN(cuDeviceTotalMem, (unsigned int *bytes, CUdevice dev));
CUABI_FN(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev));
CUABI_FN(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev));
CUABI_FN(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev));
CUABI_FN(cuDeviceGetByPCIBusId, (CUdevice * dev, const char *pciBusId));

/* Primary contexts */
CUABI_FN(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev));
CUABI_FN(cuDevicePrimaryCtxRelease, (CUdevice dev));
CUABI_FN(cuDevicePrimaryCtxRelease_v2, (CUdevice dev));
CUABI_FN(cuDevicePrimaryCtxReset, (CUdevice dev));
CUABI_FN(cuDevicePrimaryCtxReset_v2, (CUdevice dev));
CUABI_FN(cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags));
CUABI_FN(cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags));
CUABI_FN(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active));

/* Contexts */
CUABI_FN(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev));
CUABI_FN(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev));
CUABI_FN(cuCtxCreate_v3, (CUcontext * pctx, CUexecAffinityParam *paramsArray, int numParams,
                          unsigned int flags, CUdevice dev));
CUABI_FN(cuCtxCreate_v4,
         (CUcontext * pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev));
CUABI_FN(cuCtxDestroy, (CUcontext ctx));
CUABI_FN(cuCtxDestroy_v2, (CUcontext ctx));
CUABI_FN(cuCtxSetCurrent, (CUcontext ctx));
CUABI_FN(cuCtxGetCurrent, (CUcontext * pctx));
CUABI_FN(cuCtxGetDevice, (CUdevice * device));
CUABI_FN(cuCtxPushCurrent, (CUcontext ctx));
CUABI_FN(cuCtxPushCurrent_v2, (CUcontext ctx));
CUABI_FN(cuCtxPopCurrent, (CUcontext * pctx));
CUABI_FN(cuCtxPopCurrent_v2, (CUcontext * pctx));
CUABI_FN(cuCtxSynchronize, (void));
CUABI_FN(cuCtxSetLimit, (CUlimit limit, size_t value));
CUABI_FN(cuCtxGetLimit, (size_t * pvalue, CUlimit limit));
CUABI_FN(cuCtxSynchronize_v2, (CUcontext ctx));
CUABI_FN(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx));
CUABI_FN(cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority));

/* Linear memory (legacy unversioned exports take 32-bit sizes and pointers) */
CUABI_FN(cuMemGetInfo, (unsigned int *free, unsigned int *total));
CUABI_FN(cuMemGetInfo_v2, (size_t * free, size_t *total));
CUABI_FN(cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize));
CUABI_FN(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize));
CUABI_FN(cuMemAllocPitch, (CUdeviceptr_v1 * dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                           unsigned int Height, unsigned int ElementSizeBytes));
CUABI_FN(cuMemAllocPitch_v2, (CUdeviceptr * dptr, size_t *pPitch, size_t WidthInBytes,
                              size_t Height, unsigned int ElementSizeBytes));
CUABI_FN(cuMemFree, (CUdeviceptr_v1 dptr));
CUABI_FN(cuMemFree_v2, (CUdeviceptr dptr));
CUABI_FN(cuMemGetAddressRange, (CUdeviceptr_v1 * pbase, unsigned int *psize, CUdeviceptr_v1 dptr));
CUABI_FN(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t *psize, CUdeviceptr dptr));
CUABI_FN(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr));
CUABI_FN(cuPointerGetAttributes, (unsigned int numAttributes, CUpointer_attribute *attributes,
                                  void **data, CUdeviceptr ptr));
CUABI_FN(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags));
CUABI_FN(cuMemAllocHost, (void **pp, unsigned int bytesize));
CUABI_FN(cuMemAllocHost_v2, (void **pp, size_t bytesize));
CUABI_FN(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags));
CUABI_FN(cuMemFreeHost, (void *p));
CUABI_FN(cuMemHostGetDevicePointer_v2, (CUdeviceptr * pdptr, void *p, unsigned int Flags));
CUABI_FN(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags));
CUABI_FN(cuMemHostUnregister, (void *p));

/* Copies and sets */
CUABI_FN(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount));
CUABI_FN(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount));
CUABI_FN(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyAsync_ptsz,
         (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyHtoD, (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount));
CUABI_FN(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount));
CUABI_FN(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount));
CUABI_FN(cuMemcpyDtoH, (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount));
CUABI_FN(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount));
CUABI_FN(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount));
CUABI_FN(cuMemcpyDtoD,
         (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount));
CUABI_FN(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount));
CUABI_FN(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount));
CUABI_FN(cuMemcpyHtoDAsync_v2,
         (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyHtoDAsync_v2_ptsz,
         (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoHAsync_v2,
         (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoHAsync_v2_ptsz,
         (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoDAsync_v2,
         (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoDAsync_v2_ptsz,
         (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemsetD8, (CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N));
CUABI_FN(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N));
CUABI_FN(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N));
CUABI_FN(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream));
CUABI_FN(cuMemsetD8Async_ptsz,
         (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream));

CUABI_FN(cuMemsetD2D8, (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc,
                        unsigned int Width, unsigned int Height));
CUABI_FN(cuMemsetD2D8_v2,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D8_v2_ptds,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D8Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                             size_t Height, CUstream hStream));
CUABI_FN(cuMemsetD2D8Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                  size_t Width, size_t Height, CUstream hStream));
/* 16- and 32-bit sets: N (Width) elements of the value; the destination (and the pitch) aligned
 * to the element's size. */
CUABI_FN(cuMemsetD16, (CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N));
CUABI_FN(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N));
CUABI_FN(cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N));
CUABI_FN(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream));
CUABI_FN(cuMemsetD16Async_ptsz,
         (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream));
CUABI_FN(cuMemsetD32, (CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N));
CUABI_FN(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N));
CUABI_FN(cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N));
CUABI_FN(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream));
CUABI_FN(cuMemsetD32Async_ptsz,
         (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream));
CUABI_FN(cuMemsetD2D16, (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us,
                         unsigned int Width, unsigned int Height));
CUABI_FN(cuMemsetD2D16_v2,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D16_v2_ptds,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D16Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                              size_t Width, size_t Height, CUstream hStream));
CUABI_FN(cuMemsetD2D16Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                   size_t Width, size_t Height, CUstream hStream));
CUABI_FN(cuMemsetD2D32, (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui,
                         unsigned int Width, unsigned int Height));
CUABI_FN(cuMemsetD2D32_v2,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D32_v2_ptds,
         (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height));
CUABI_FN(cuMemsetD2D32Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                              size_t Height, CUstream hStream));
CUABI_FN(cuMemsetD2D32Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                   size_t Width, size_t Height, CUstream hStream));
CUABI_FN(cuMemcpyPeer, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                        CUcontext srcContext, size_t ByteCount));
CUABI_FN(cuMemcpyPeer_ptds, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                             CUcontext srcContext, size_t ByteCount));
CUABI_FN(cuMemcpyPeerAsync, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                             CUcontext srcContext, size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyPeerAsync_ptsz,
         (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
          size_t ByteCount, CUstream hStream));
CUABI_FN(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy));
CUABI_FN(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy));
CUABI_FN(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy));
CUABI_FN(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy));
CUABI_FN(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy));
CUABI_FN(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy));
CUABI_FN(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy));
CUABI_FN(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy));
CUABI_FN(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream));
/* Batches of 1D copies: the 12.8 exports report the failing copy's index (failIdx, SIZE_MAX when
 * none is to blame), the 13.0 _v2 ones do not; the stream may not be the legacy one. */
CUABI_FN(cuMemcpyBatchAsync, (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                              CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                              size_t *failIdx, CUstream hStream));
CUABI_FN(cuMemcpyBatchAsync_ptsz, (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes,
                                   size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                   size_t numAttrs, size_t *failIdx, CUstream hStream));
CUABI_FN(cuMemcpyBatchAsync_v2,
         (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream));
CUABI_FN(cuMemcpyBatchAsync_v2_ptsz,
         (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream));
/* The v1 (pre-3.2) asynchronous, 2D and 3D copies: 32-bit sizes and device pointers. */
CUABI_FN(cuMemcpyHtoDAsync,
         (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoHAsync,
         (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream));
CUABI_FN(cuMemcpyDtoDAsync, (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                             unsigned int ByteCount, CUstream hStream));
CUABI_FN(cuMemcpy2D, (const CUDA_MEMCPY2D_v1 *pCopy));
CUABI_FN(cuMemcpy2DUnaligned, (const CUDA_MEMCPY2D_v1 *pCopy));
CUABI_FN(cuMemcpy2DAsync, (const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream));
CUABI_FN(cuMemcpy3D, (const CUDA_MEMCPY3D_v1 *pCopy));
CUABI_FN(cuMemcpy3DAsync, (const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream));
CUABI_FN(cuMemHostGetFlags, (unsigned int *pFlags, void *p));

/* Unified memory hints */
CUABI_FN(cuMemAdvise, (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device));
CUABI_FN(cuMemAdvise_v2,
         (CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location));
CUABI_FN(cuMemPrefetchAsync,
         (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream));
CUABI_FN(cuMemPrefetchAsync_ptsz,
         (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream));
CUABI_FN(cuMemPrefetchAsync_v2, (CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                 unsigned int flags, CUstream hStream));
CUABI_FN(cuMemPrefetchAsync_v2_ptsz, (CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                      unsigned int flags, CUstream hStream));

/* CUDA 13: batches of prefetches; prefetchLocs[k] applies to the operations from
 * prefetchLocIdxs[k] up to the next entry's first (flags: 0). */
CUABI_FN(cuMemPrefetchBatchAsync,
         (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
          size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
          CUstream hStream));
CUABI_FN(cuMemPrefetchBatchAsync_ptsz,
         (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
          size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
          CUstream hStream));
CUABI_FN(cuMemDiscardAndPrefetchBatchAsync,
         (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
          size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
          CUstream hStream));
CUABI_FN(cuMemDiscardAndPrefetchBatchAsync_ptsz,
         (CUdeviceptr * dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
          size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
          CUstream hStream));

/* Stream-ordered allocation and pools */
CUABI_FN(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream));
CUABI_FN(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream));
CUABI_FN(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream));
CUABI_FN(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream));
CUABI_FN(cuMemAllocFromPoolAsync,
         (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream));
CUABI_FN(cuMemAllocFromPoolAsync_ptsz,
         (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream));
CUABI_FN(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps));
CUABI_FN(cuMemPoolDestroy, (CUmemoryPool pool));
CUABI_FN(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep));
CUABI_FN(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value));
CUABI_FN(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value));
CUABI_FN(cuMemPoolSetAccess, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count));
CUABI_FN(cuMemPoolGetAccess,
         (CUmemAccess_flags * flags, CUmemoryPool memPool, CUmemLocation *location));
CUABI_FN(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev));
CUABI_FN(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev));
CUABI_FN(cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool));
CUABI_FN(cuMemGetDefaultMemPool,
         (CUmemoryPool * pool_out, CUmemLocation *location, CUmemAllocationType type));
CUABI_FN(cuMemGetMemPool, (CUmemoryPool * pool, CUmemLocation *location, CUmemAllocationType type));
CUABI_FN(cuMemSetMemPool, (CUmemLocation * location, CUmemAllocationType type, CUmemoryPool pool));

/* Virtual memory management */
CUABI_FN(cuMemCreate, (CUmemGenericAllocationHandle * handle, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags));
CUABI_FN(cuMemRelease, (CUmemGenericAllocationHandle handle));
CUABI_FN(cuMemAddressReserve, (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,
                               unsigned long long flags));
CUABI_FN(cuMemAddressFree, (CUdeviceptr ptr, size_t size));
CUABI_FN(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset,
                    CUmemGenericAllocationHandle handle, unsigned long long flags));
CUABI_FN(cuMemUnmap, (CUdeviceptr ptr, size_t size));
CUABI_FN(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count));
CUABI_FN(cuMemGetAllocationGranularity, (size_t * granularity, const CUmemAllocationProp *prop,
                                         CUmemAllocationGranularity_flags option));

/* Arrays */
CUABI_FN(cuArrayCreate, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray));
CUABI_FN(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray));
CUABI_FN(cuArray3DCreate, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray));
CUABI_FN(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray));
CUABI_FN(cuArrayGetDescriptor_v2, (CUDA_ARRAY_DESCRIPTOR * pArrayDescriptor, CUarray hArray));
CUABI_FN(cuArray3DGetDescriptor_v2, (CUDA_ARRAY3D_DESCRIPTOR * pArrayDescriptor, CUarray hArray));
CUABI_FN(cuArrayDestroy, (CUarray hArray));
CUABI_FN(cuMipmappedArrayCreate,
         (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
          unsigned int numMipmapLevels));
CUABI_FN(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray));

/* Modules and launch */
/* enum CUjit_option_enum: options of cuModuleLoadDataEx (int-sized). */
typedef int CUjit_option;
CUABI_FN(cuModuleLoad, (CUmodule * module, const char *fname));
CUABI_FN(cuModuleLoadData, (CUmodule * module, const void *image));
CUABI_FN(cuModuleLoadDataEx, (CUmodule * module, const void *image, unsigned int numOptions,
                              CUjit_option *options, void **optionValues));
CUABI_FN(cuModuleLoadFatBinary, (CUmodule * module, const void *fatCubin));
CUABI_FN(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name));
CUABI_FN(cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc));
CUABI_FN(cuModuleUnload, (CUmodule hmod));
/* Libraries and kernels (CUDA 12.0): enum CUlibraryOption_enum of cuda.h 13.0. */
typedef enum CUlibraryOption_enum {
    CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
    CU_LIBRARY_BINARY_IS_PRESERVED = 1,
    CU_LIBRARY_NUM_OPTIONS
} CUlibraryOption;
CUABI_FN(cuLibraryLoadData,
         (CUlibrary * library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
          unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
          unsigned int numLibraryOptions));
CUABI_FN(cuLibraryLoadFromFile,
         (CUlibrary * library, const char *fileName, CUjit_option *jitOptions,
          void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
          void **libraryOptionValues, unsigned int numLibraryOptions));
CUABI_FN(cuLibraryUnload, (CUlibrary library));
CUABI_FN(cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name));
CUABI_FN(cuLibraryGetModule, (CUmodule * pMod, CUlibrary library));
CUABI_FN(cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel));
CUABI_FN(cuLibraryGetGlobal,
         (CUdeviceptr * dptr, size_t *bytes, CUlibrary library, const char *name));
CUABI_FN(cuLibraryGetManaged,
         (CUdeviceptr * dptr, size_t *bytes, CUlibrary library, const char *name));
CUABI_FN(cuKernelGetAttribute,
         (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev));
CUABI_FN(cuKernelSetAttribute,
         (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev));
CUABI_FN(cuLaunchKernel,
         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
          unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra));
CUABI_FN(cuLaunchKernel_ptsz,
         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
          unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra));
CUABI_FN(cuLaunchKernelEx,
         (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra));
CUABI_FN(cuLaunchKernelEx_ptsz,
         (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra));
CUABI_FN(cuLaunchCooperativeKernel,
         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
          unsigned int sharedMemBytes, CUstream hStream, void **kernelParams));
CUABI_FN(cuLaunchCooperativeKernel_ptsz,
         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
          unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
          unsigned int sharedMemBytes, CUstream hStream, void **kernelParams));
CUABI_FN(cuLaunchCooperativeKernelMultiDevice,
         (CUDA_LAUNCH_PARAMS * launchParamsList, unsigned int numDevices, unsigned int flags));

/* Graphs */
CUABI_FN(cuGraphCreate, (CUgraph * phGraph, unsigned int flags));
CUABI_FN(cuGraphDestroy, (CUgraph hGraph));
CUABI_FN(cuGraphAddKernelNode_v2,
         (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
          size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams));
CUABI_FN(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes));
CUABI_FN(cuGraphInstantiate, (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                              char *logBuffer, size_t bufferSize));
CUABI_FN(cuGraphInstantiate_v2, (CUgraphExec * phGraphExec, CUgraph hGraph,
                                 CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize));
CUABI_FN(cuGraphInstantiateWithFlags,
         (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags));
CUABI_FN(cuGraphInstantiateWithParams, (CUgraphExec * phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams));
CUABI_FN(cuGraphInstantiateWithParams_ptsz, (CUgraphExec * phGraphExec, CUgraph hGraph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams));
/* A kernel or a graph put into an executable graph: the structures are forwarded untouched
 * (CUDA_KERNEL_NODE_PARAMS_v1 for the unversioned cuGraphExecKernelNodeSetParams, _v2 above for
 * _v2; CUgraphExecUpdateResultInfo; CUgraphNodeParams). */
typedef enum CUgraphExecUpdateResult_enum {
    CU_GRAPH_EXEC_UPDATE_SUCCESS = 0,
    CU_GRAPH_EXEC_UPDATE_ERROR = 1,
    CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2
} CUgraphExecUpdateResult;
typedef struct CUgraphExecUpdateResultInfo_st {
    CUgraphExecUpdateResult result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
typedef struct CUgraphNodeParams_st CUgraphNodeParams;
CUABI_FN(cuGraphExecKernelNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const void *nodeParams));
CUABI_FN(cuGraphExecKernelNodeSetParams_v2,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams));
CUABI_FN(cuGraphExecUpdate, (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                             CUgraphExecUpdateResult *updateResult_out));
CUABI_FN(cuGraphExecUpdate_v2,
         (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo));
CUABI_FN(cuGraphExecChildGraphNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph));
CUABI_FN(cuGraphExecNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams));
CUABI_FN(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream));
CUABI_FN(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream));
CUABI_FN(cuGraphExecDestroy, (CUgraphExec hGraphExec));
CUABI_FN(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream));
CUABI_FN(cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream));
CUABI_FN(cuStreamBeginCapture, (CUstream hStream));
CUABI_FN(cuStreamBeginCapture_ptsz, (CUstream hStream));
CUABI_FN(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode));
CUABI_FN(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode));
CUABI_FN(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph));
CUABI_FN(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph));
CUABI_FN(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus));
CUABI_FN(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus));
CUABI_FN(cuStreamGetCaptureInfo,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out));
CUABI_FN(cuStreamGetCaptureInfo_ptsz,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out));
CUABI_FN(cuStreamGetCaptureInfo_v2,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
          CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out));
CUABI_FN(cuStreamGetCaptureInfo_v2_ptsz,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
          CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out));
CUABI_FN(cuStreamGetCaptureInfo_v3,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
          CUgraph *graph_out, const CUgraphNode **dependencies_out,
          const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out));
CUABI_FN(cuStreamGetCaptureInfo_v3_ptsz,
         (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
          CUgraph *graph_out, const CUgraphNode **dependencies_out,
          const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out));

/* Streams */
CUABI_FN(cuStreamCreate, (CUstream * phStream, unsigned int Flags));
CUABI_FN(cuStreamCreateWithPriority, (CUstream * phStream, unsigned int flags, int priority));
CUABI_FN(cuStreamDestroy, (CUstream hStream));
CUABI_FN(cuStreamDestroy_v2, (CUstream hStream));
CUABI_FN(cuStreamSynchronize, (CUstream hStream));
CUABI_FN(cuStreamSynchronize_ptsz, (CUstream hStream));
CUABI_FN(cuStreamQuery, (CUstream hStream));
CUABI_FN(cuStreamQuery_ptsz, (CUstream hStream));
CUABI_FN(cuStreamGetPriority, (CUstream hStream, int *priority));
CUABI_FN(cuStreamGetPriority_ptsz, (CUstream hStream, int *priority));
CUABI_FN(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx));
CUABI_FN(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags));
CUABI_FN(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags));

/* Stream memory operations (count: fewer than 256 operations in a batch) */
CUABI_FN(cuStreamWriteValue32,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue32,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWriteValue64,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue64,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamBatchMemOp, (CUstream stream, unsigned int count,
                              CUstreamBatchMemOpParams *paramArray, unsigned int flags));
CUABI_FN(cuStreamWriteValue32_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue32_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWriteValue64_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue64_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamBatchMemOp_ptsz, (CUstream stream, unsigned int count,
                                   CUstreamBatchMemOpParams *paramArray, unsigned int flags));
CUABI_FN(cuStreamWriteValue32_v2,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue32_v2,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWriteValue64_v2,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue64_v2,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamBatchMemOp_v2, (CUstream stream, unsigned int count,
                                 CUstreamBatchMemOpParams *paramArray, unsigned int flags));
CUABI_FN(cuStreamWriteValue32_v2_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue32_v2_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags));
CUABI_FN(cuStreamWriteValue64_v2_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamWaitValue64_v2_ptsz,
         (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags));
CUABI_FN(cuStreamBatchMemOp_v2_ptsz, (CUstream stream, unsigned int count,
                                      CUstreamBatchMemOpParams *paramArray, unsigned int flags));

/* Host functions and callbacks */
CUABI_FN(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData));
CUABI_FN(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData));
CUABI_FN(cuStreamAddCallback,
         (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags));
CUABI_FN(cuStreamAddCallback_ptsz,
         (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags));

/* Events */
CUABI_FN(cuEventCreate, (CUevent * phEvent, unsigned int Flags));
CUABI_FN(cuEventRecord, (CUevent hEvent, CUstream hStream));
CUABI_FN(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream));
/* flags: 0, or CU_EVENT_RECORD_EXTERNAL (1: an external event node when the stream is being
 * captured). */
CUABI_FN(cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags));
CUABI_FN(cuEventRecordWithFlags_ptsz, (CUevent hEvent, CUstream hStream, unsigned int flags));
CUABI_FN(cuEventSynchronize, (CUevent hEvent));
CUABI_FN(cuEventQuery, (CUevent hEvent));
CUABI_FN(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd));
CUABI_FN(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd));
CUABI_FN(cuEventDestroy, (CUevent hEvent));
CUABI_FN(cuEventDestroy_v2, (CUevent hEvent));

/* Checkpointing (driver r570+: absent from older drivers' libcuda, so look them up with dlsym
 * and treat a missing symbol as "not supported").  Called by another process on `pid`. */
CUABI_FN(cuCheckpointProcessGetRestoreThreadId, (int pid, int *tid));
CUABI_FN(cuCheckpointProcessGetState, (int pid, CUprocessState *state));
CUABI_FN(cuCheckpointProcessLock, (int pid, CUcheckpointLockArgs *args));
CUABI_FN(cuCheckpointProcessCheckpoint, (int pid, CUcheckpointCheckpointArgs *args));
CUABI_FN(cuCheckpointProcessRestore, (int pid, CUcheckpointRestoreArgs *args));
CUABI_FN(cuCheckpointProcessUnlock, (int pid, CUcheckpointUnlockArgs *args));

#ifdef __cplusplus
}
#endif

#endif
