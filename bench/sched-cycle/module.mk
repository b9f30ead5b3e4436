# bench-sched-cycle: one full scheduling cycle (ordering, placement, preemption planning) over
# 10,000 pending jobs on the trace's 1,213 GPU nodes (docs/scheduler-queues.md, "Benchmark").
# (Libraries named by path: bench/ is read before src/common/*.)
BENCHES += $(O)/bench/bench-sched-cycle
$(O)/bench/bench-sched-cycle: $(O)/obj/bench/sched-cycle/cycle.o $(O)/lib/libtsl-sched.a \
                              $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm
