/* symbols.c - the table of hooked entry points: name -> hook, real pointer,
 * and the cuGetProcAddress variant choice (see symbols.h). */
#include <dlfcn.h>
#include <string.h>

#include "interposer/interposer.h"
#include "interposer/symbols.h"

void *tcu_real[TCU_SYM_COUNT];

struct sym {
    const char *name;
    const char *base;
    int since;
    int ptds;
    void *hook;
};

static const struct sym syms[TCU_SYM_COUNT] = {
#define TCU_ROW_CUDA(n, b, s, p) [TCU_SYM_##n] = {#n, b, s, p, (void *)n},
#define TCU_ROW_CALL(n)          [TCU_SYM_##n] = {#n, NULL, 0, 0, NULL},
#define TCU_ROW_NVML(n)          [TCU_SYM_##n] = {#n, NULL, 0, 0, (void *)n},
    TCU_CUDA_SYMBOLS(TCU_ROW_CUDA) TCU_CUDA_CALLS(TCU_ROW_CALL) TCU_NVML_SYMBOLS(TCU_ROW_NVML)
        TCU_NVML_CALLS(TCU_ROW_CALL)
#undef TCU_ROW_CUDA
#undef TCU_ROW_CALL
#undef TCU_ROW_NVML
};

const char *tcu_sym_name(int i)
{
    return (i >= 0 && i < TCU_SYM_COUNT) ? syms[i].name : NULL;
}

void *tcu_sym_hook(int i)
{
    return (i >= 0 && i < TCU_SYM_COUNT) ? syms[i].hook : NULL;
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
        if (syms[i].hook && same(syms[i].name, name))
            return 1;
    return 0;
}

void *tcu_hook_by_name(const char *name)
{
    if (!name || (name[0] != 'c' && name[0] != 'n'))
        return NULL;
    for (int i = 0; i < TCU_SYM_COUNT; i++)
        if (syms[i].hook && strcmp(syms[i].name, name) == 0)
            return syms[i].hook;
    return NULL;
}

void *tcu_hook_for_proc(const char *symbol, void *real_pfn, int version, cuuint64_t flags)
{
    if (!symbol)
        return NULL;
    int found = 0, best = -1, best_pt = -1;
    for (int i = 0; i < TCU_SYM_NCUDA_HOOKS; i++) {
        if (strcmp(syms[i].base, symbol) != 0)
            continue;
        found = 1;
        /* The driver's own answer decides when we recognise it. */
        if (real_pfn && tcu_real[i] == real_pfn)
            return syms[i].hook;
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
    return syms[best].hook;
}

void tcu_symbols_resolve(void *cuda, void *nvml)
{
    for (int i = 0; i < TCU_SYM_COUNT; i++) {
        void *h = i < TCU_SYM_NCUDA ? cuda : nvml;
        if (h && syms[i].name) /* the enum's count markers have no row */
            tcu_real[i] = tcu_real_dlsym(h, syms[i].name);
    }
}
