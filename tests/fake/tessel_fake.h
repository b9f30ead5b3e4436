/* tessel_fake.h - test hooks of the fake libcuda.so.1 and libnvidia-ml.so.1.
 *
 * TEST DOUBLES ONLY.  These functions exist in the fakes, never in the real
 * driver and never in libtessel-cuda: a test that wants them links the fake
 * (or dlsym()s them from it).  Device numbers are CUDA ordinals (after
 * CUDA_VISIBLE_DEVICES); every hook
 * answers 0 for an invalid device or before a successful cuInit.
 * See tests/fake/README.md.
 */
#ifndef TESSEL_FAKE_H
#define TESSEL_FAKE_H

#include "cudaabi/cuda_abi.h"

/* ---- fake libcuda.so.1 ---- */

/* Calls so far of one exported entry point, by its exported name: variants
 * count separately ("cuMemAlloc", "cuMemAlloc_v2", "cuMemcpyHtoD_v2_ptds").
 * Unknown names: 0.  Counting is lock-free and never reset by the fake. */
unsigned long long tessel_fake_calls(const char *entry_point);
unsigned long long tessel_fake_calls_total(void);
void tessel_fake_reset_calls(void);

/* Every exported entry point name (static storage); returns the count. */
int tessel_fake_entry_points(const char ***names);

/* Device memory in use on the device, by all processes sharing the state
 * (contexts, allocations, pool reservations, VMM handles, arrays), and the
 * part this process charged. */
unsigned long long tessel_fake_device_used(int dev);
unsigned long long tessel_fake_process_used(int dev);

/* Simulated kernel time scheduled on the device (all processes) and by this
 * process, in ns; kernels scheduled on the device; CLOCK_MONOTONIC time the
 * device's queue drains. */
unsigned long long tessel_fake_device_busy_ns(int dev);
unsigned long long tessel_fake_process_busy_ns(int dev);
unsigned long long tessel_fake_device_kernels(int dev);
unsigned long long tessel_fake_device_idle_at_ns(int dev);
unsigned long long tessel_fake_now_ns(void); /* the fake's clock (CLOCK_MONOTONIC) */

/* The same figures for another process sharing TESSEL_FAKE_STATE (0 for a
 * pid that holds no slot): what a test harness reads about its children. */
unsigned long long tessel_fake_pid_used(int dev, int pid);
unsigned long long tessel_fake_pid_busy_ns(int dev, int pid);

/* Charge (bytes > 0) or give back (bytes < 0) device memory to this process
 * outside any allocation, as another tenant of the GPU would: lowers what
 * cuMemGetInfo / NVML report free.  0, or -1 when it does not fit (or more is
 * given back than this process holds). Released at exit like the rest. */
int tessel_fake_occupy(int dev, long long bytes);

/* Fix the simulated duration of every later launch of f (overrides the
 * name convention and TESSEL_FAKE_KERNEL_US).  0 on success, -1 for an
 * invalid function. */
int tessel_fake_set_kernel_us(CUfunction f, unsigned long long us);

/* Bytes an array with this descriptor and mip levels (1 for a plain array)
 * occupies before rounding to TESSEL_FAKE_ALLOC_GRANULE; 0 if invalid. */
unsigned long long tessel_fake_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);

/* Managed allocation containing ptr (README "Managed memory"): where its pages are
 * (*resident: -1 the host, else the CUDA ordinal holding them), its preferred location
 * (*pref_type: a CUmemLocationType, 0 = none; *pref_id) and the ordinals advised to access it
 * (bit mask).  0, or -1 when ptr is not in a managed allocation. */
int tessel_fake_managed(unsigned long long ptr, int *resident, int *pref_type, int *pref_id,
                        unsigned long long *accessed_by);

/* Destroy every context, allocation, pool and handle of this process, give
 * its device memory back and forget cuInit, so that the next cuInit reads
 * the environment again.  For tests that try several configurations in one
 * process; not thread-safe against concurrent CUDA calls. */
void tessel_fake_reset(void);

/* The mapped device state (fake_state.h) once cuInit succeeded, else NULL:
 * how the fake NVML sees this process's usage without TESSEL_FAKE_STATE. */
void *tessel_fake_state(void);

/* ---- fake libnvidia-ml.so.1 ---- */

unsigned long long tessel_fake_nvml_calls(const char *entry_point);
void tessel_fake_nvml_reset_calls(void);

#endif
