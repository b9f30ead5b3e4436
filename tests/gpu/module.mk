# tests/gpu: the real-GPU proof (tests/gpu/run.sh, run by hand on a GPU host).
# In CI, t0600-t0605 run its SIMULATED mode on the fake driver so that the
# script's plumbing (rows, figures, verdicts, exit status) cannot rot.
GPU_SIM_TESTS := tests/t/t0600-gpu-simulated.t tests/t/t0601-gpu-simulated-compute.t \
                 tests/t/t0602-gpu-simulated-selftest.t \
                 tests/t/t0603-gpu-simulated-exec-kill.t tests/t/t0604-gpu-simulated-fork-view.t \
                 tests/t/t0605-gpu-simulated-ckpt.t
TESTS += $(GPU_SIM_TESTS)
$(GPU_SIM_TESTS): $(O)/lib/libtessel-cuda.so $(FAKE_LIBS) $(O)/tests/interposer/tcu-slice \
                  $(O)/tests/interposer/tcu-load
