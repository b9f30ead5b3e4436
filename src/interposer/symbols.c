/* symbols.c - the table of hooked entry points: name -> hook, real pointer,
 * and the cuGetProcAddress variant choice (see symbols.h). */
#include <dlfcn.h>
#include <string.h>

#include "interposer/interposer.h"
#include "interposer/symbols.h"

void *tcu_real[TCU_SYM_COUNT];

/* The names are arrays in the rows, not pointers: the table lives in .rodata and needs no
 * relocation when the library is loaded (every process of a job loads it, most never call
 * CUDA: docs/interposer.md "Load cost").  Only the hooks' addresses are relocated. */
#define TCU_SYM_NAME_MAX 48
#define TCU_SYM_BASE_MAX 40

struct sym {
    char name[TCU_SYM_NAME_MAX]; /* "" for the enum's count markers */
    char base[TCU_SYM_BASE_MAX];
    int since;
    int ptds;
};

static const struct sym syms[TCU_SYM_COUNT] = {
#define TCU_ROW_CUDA(n, b, s, p) [TCU_SYM_##n] = {#n, b, s, p},
#define TCU_ROW_ONE(n)           [TCU_SYM_##n] = {#n, "", 0, 0},
    TCU_CUDA_SYMBOLS(TCU_ROW_CUDA) TCU_CUDA_CALLS(TCU_ROW_ONE) TCU_NVML_SYMBOLS(TCU_ROW_ONE)
        TCU_NVML_CALLS(TCU_ROW_ONE)
#undef TCU_ROW_CUDA
#undef TCU_ROW_ONE
};

/* Every name and base fits its array with its terminating NUL. */
#define TCU_FITS_CUDA(n, b, s, p)                                                                  \
    _Static_assert(sizeof #n <= TCU_SYM_NAME_MAX && sizeof b <= TCU_SYM_BASE_MAX, #n " too long");
#define TCU_FITS_ONE(n) _Static_assert(sizeof #n <= TCU_SYM_NAME_MAX, #n " too long");
TCU_CUDA_SYMBOLS(TCU_FITS_CUDA)
TCU_CUDA_CALLS(TCU_FITS_ONE)
TCU_NVML_SYMBOLS(TCU_FITS_ONE)
TCU_NVML_CALLS(TCU_FITS_ONE)
#undef TCU_FITS_CUDA
#undef TCU_FITS_ONE

/* Our hook for each row (NULL for the calls we only make). */
static void *const hooks[TCU_SYM_COUNT] = {
#define TCU_HOOK_CUDA(n, b, s, p) [TCU_SYM_##n] = (void *)n,
#define TCU_HOOK_NVML(n)          [TCU_SYM_##n] = (void *)n,
    TCU_CUDA_SYMBOLS(TCU_HOOK_CUDA) TCU_NVML_SYMBOLS(TCU_HOOK_NVML)
#undef TCU_HOOK_CUDA
#undef TCU_HOOK_NVML
};

const char *tcu_sym_name(int i)
{
    return (i >= 0 && i < TCU_SYM_COUNT && syms[i].name[0]) ? syms[i].name : NULL;
}

void *tcu_sym_hook(int i)
{
    return (i >= 0 && i < TCU_SYM_COUNT) ? hooks[i] : NULL;
}

TCU_NO_SANITIZE static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

TCU_NO_SANITIZE int tcu_is_hooked_name(const char *name)
{
    /* Most dlsym calls are for other names: two characters decide. */
    if (!((name[0] == 'c' && name[1] == 'u') || (name[0] == 'n' && name[1] == 'v')))
        return 0;
    for (int i = 0; i < TCU_SYM_COUNT; i++)
        if (hooks[i] && same(syms[i].name, name))
            return 1;
    return 0;
}

void *tcu_hook_by_name(const char *name)
{
    if (!name || (name[0] != 'c' && name[0] != 'n'))
        return NULL;
    for (int i = 0; i < TCU_SYM_COUNT; i++)
        if (hooks[i] && strcmp(syms[i].name, name) == 0)
            return hooks[i];
    return NULL;
}

/* Names whose later versions are another entry point with another signature (cuda.h's
 * `#define cuGraphInstantiate cuGraphInstantiateWithFlags` since 12.0): from that version on, the
 * name stands for the other entry point's hooks. */
static const struct {
    char base[32]; /* arrays, not pointers: nothing here for the loader to relocate (t3141) */
    int since;
    char now[32];
} renamed[] = {{"cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"}};

void *tcu_hook_for_proc(const char *symbol, void *real_pfn, int version, cuuint64_t flags)
{
    if (!symbol)
        return NULL;
    for (size_t r = 0; r < sizeof renamed / sizeof renamed[0]; r++)
        if (version >= renamed[r].since && strcmp(symbol, renamed[r].base) == 0)
            symbol = renamed[r].now;
    int found = 0, best = -1, best_pt = -1;
    for (int i = 0; i < TCU_SYM_NCUDA_HOOKS; i++) {
        if (strcmp(syms[i].base, symbol) != 0)
            continue;
        found = 1;
        /* The driver's own answer decides when we recognise it. */
        if (real_pfn && tcu_real[i] == real_pfn)
            return hooks[i];
        if (syms[i].since > version)
            continue;
        if (syms[i].ptds) {
            if (best_pt < 0 || syms[i].since > syms[best_pt].since)
                best_pt = i;
        } else if (best < 0 || syms[i].since > syms[best].since) {
            best = i;
        }
    }
    if (!found)
        return NULL;
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best_pt >= 0)
        best = best_pt;
    if (best < 0 || !tcu_real[best])
        return NULL;
    return hooks[best];
}

void tcu_symbols_resolve(void *cuda, void *nvml)
{
    for (int i = 0; i < TCU_SYM_COUNT; i++) {
        void *h = i < TCU_SYM_NCUDA ? cuda : nvml;
        if (h && syms[i].name[0]) /* the enum's count markers have no row */
            tcu_real[i] = tcu_real_dlsym(h, syms[i].name);
    }
}
