/* raw.c - tcu-raw: a hostile job's allocation that the interposer never sees, for the
 * GPU-memory watchdog's tests (tests/t/t3027-daemon-enforce.t).
 *
 * Usage: tcu-raw LIBCUDA MIB [WAITFILE]
 *
 * Loads LIBCUDA (the driver, by full path) and finds its entry points by reading the library's
 * own ELF symbol table, as a statically linked program or a program with its own loader would:
 * no dlsym, so the interposer's dlsym hook and its exported cu* symbols are never in the way.
 * Then cuInit, the primary context of device 0, and one cuMemAlloc_v2 of MIB MiB; prints
 * "raw rc=R mib=MIB t_ns=T" (T: CLOCK_REALTIME when the allocation returned, for
 * bench/watchdog) and waits until WAITFILE exists (or is killed), then exits 0.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"

struct find {
    const char *name; /* the library's path, as loaded */
    const char *sym;
    void *addr;
};

/* The symbol's address in the loaded object named f->name, from its dynamic symbol table. */
static int lookup(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    if (!info->dlpi_name || strcmp(info->dlpi_name, f->name) != 0)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    uintptr_t symtab = 0, strtab = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            symtab = dyn->d_un.d_ptr;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = dyn->d_un.d_ptr;
    }
    /* glibc relocates these in place on most targets; not on all. */
    if (symtab < info->dlpi_addr)
        symtab += info->dlpi_addr;
    if (strtab < info->dlpi_addr)
        strtab += info->dlpi_addr;
    /* .dynsym comes right before .dynstr in the linkers' layout. */
    for (const ElfW(Sym) *s = (const ElfW(Sym) *)symtab; (uintptr_t)s < strtab; s++) {
        if (s->st_shndx != SHN_UNDEF && s->st_value &&
            strcmp((const char *)strtab + s->st_name, f->sym) == 0) {
            f->addr = (void *)(info->dlpi_addr + s->st_value);
            return 1;
        }
    }
    return 0;
}

static void *resolve(const char *lib, const char *sym)
{
    struct find f = {lib, sym, NULL};
    dl_iterate_phdr(lookup, &f);
    if (!f.addr) {
        fprintf(stderr, "tcu-raw: %s: no %s\n", lib, sym);
        exit(2);
    }
    return f.addr;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tcu-raw LIBCUDA MIB [WAITFILE]\n");
        return 2;
    }
    const char *lib = argv[1];
    if (!dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
        fprintf(stderr, "tcu-raw: %s\n", dlerror());
        return 2;
    }
    cuInit_fn init = (cuInit_fn)resolve(lib, "cuInit");
    cuDevicePrimaryCtxRetain_fn retain =
        (cuDevicePrimaryCtxRetain_fn)resolve(lib, "cuDevicePrimaryCtxRetain");
    cuCtxSetCurrent_fn setcur = (cuCtxSetCurrent_fn)resolve(lib, "cuCtxSetCurrent");
    cuMemAlloc_v2_fn alloc = (cuMemAlloc_v2_fn)resolve(lib, "cuMemAlloc_v2");
    unsigned long mib = strtoul(argv[2], NULL, 10);
    CUcontext ctx;
    CUdeviceptr p;
    CUresult rc = init(0);
    if (rc == CUDA_SUCCESS)
        rc = retain(&ctx, 0);
    if (rc == CUDA_SUCCESS)
        rc = setcur(ctx);
    if (rc == CUDA_SUCCESS)
        rc = alloc(&p, (size_t)mib << 20);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("raw rc=%d mib=%lu t_ns=%lld\n", (int)rc, mib,
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    while (argc > 3 && access(argv[3], F_OK) != 0)
        usleep(20000);
    return rc == CUDA_SUCCESS ? 0 : 1;
}
