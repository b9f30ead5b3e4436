/* plugin.c - tcu-plugin.so: a plugin that dlopens libcuda privately
 * (RTLD_LOCAL) and allocates through dlsym on its own handle, as framework
 * plugins do.  Loaded by tcu-probe --via=plugin. */
#include <dlfcn.h>
#include <stdint.h>

#include "cudaabi/cuda_abi.h"

int tcu_plugin_alloc(uint64_t size, uint64_t *ptr);
int tcu_plugin_free(uint64_t ptr);

static void *cuda(void)
{
    static void *h;
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return h;
}

int tcu_plugin_alloc(uint64_t size, uint64_t *ptr)
{
    cuMemAlloc_v2_fn f = (cuMemAlloc_v2_fn)dlsym(cuda(), "cuMemAlloc_v2");
    CUdeviceptr p = 0;
    CUresult r = f ? f(&p, size) : CUDA_ERROR_NOT_FOUND;
    *ptr = p;
    return (int)r;
}

int tcu_plugin_free(uint64_t ptr)
{
    cuMemFree_v2_fn f = (cuMemFree_v2_fn)dlsym(cuda(), "cuMemFree_v2");
    return f ? (int)f(ptr) : (int)CUDA_ERROR_NOT_FOUND;
}
