# tessel-sim: replays a GPU-sharing trace against the placement policies.
# (libraries named by path: this fragment is read before src/common/*.)
BINS += $(O)/bin/tessel-sim
$(O)/bin/tessel-sim: $(O)/obj/src/cmd/tessel-sim/main.o \
                     $(O)/obj/src/cmd/tessel-sim/sim_events.o $(O)/lib/libtsl-sched.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

# Its integration test replays the trace at a reduced load (tests/t/t1000-*).
TESTS += tests/t/t1000-sched-sim.t
tests/t/t1000-sched-sim.t: $(O)/bin/tessel-sim

# Event-driven mode (queues, arrivals and departures): tests/t/t1001-*.
TESTS += tests/t/t1001-sched-sim-events.t tests/t/t3215-sim-preempt-lost.t
tests/t/t1001-sched-sim-events.t tests/t/t3215-sim-preempt-lost.t: $(O)/bin/tessel-sim

# Placement through the index at 12,130 nodes (--node-copies 10): tests/t/t1002-*.
TESTS += tests/t/t1002-sched-sim-scale.t
tests/t/t1002-sched-sim-scale.t: $(O)/bin/tessel-sim
