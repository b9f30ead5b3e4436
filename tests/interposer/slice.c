/* slice.c - tcu-slice: print a slice file through libshm's read-only API,
 * the way tesseld shows usage per device and process.
 *
 * Usage: tcu-slice PATH
 * Output: "device I limit=L used=U ctx_cost=C" per device, then
 *         "proc PID comm=NAME used=U0" per process (bytes on device 0),
 *         then "procs N used_sum=S" (the sum over processes of device 0).
 */
#include <stdio.h>

#include "libshm/shm.h"

static int show(const tshm_proc_info_t *p, void *arg)
{
    unsigned long long *sum = arg;
    *sum += p->used[0];
    printf("proc %d comm=%s used=%llu\n", (int)p->pid, p->comm, (unsigned long long)p->used[0]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tcu-slice PATH\n");
        return 2;
    }
    tsl_error_t err = {{0}};
    tshm_t *s = tshm_open_ro(argv[1], &err);
    if (!s) {
        fprintf(stderr, "tcu-slice: %s\n", err.text);
        return 1;
    }
    for (int i = 0; i < tshm_ndevices(s); i++) {
        tshm_device_info_t d;
        if (tshm_device_info(s, i, &d) == 0)
            printf("device %d limit=%llu used=%llu ctx_cost=%llu\n", i, (unsigned long long)d.limit,
                   (unsigned long long)d.used, (unsigned long long)d.ctx_cost);
    }
    unsigned long long sum = 0;
    int n = tshm_foreach_proc(s, show, &sum);
    printf("procs %d used_sum=%llu\n", n, sum);
    tshm_close(s);
    return 0;
}
