# bench-sched-resume: tesseld's check of a waiting restore at each tick (tsched_job_may_start)
# with 100 to 10,000 pending jobs (docs/suspend.md, "The cost of a waiting restore's check");
# bench/sched-resume/compare.sh runs it against main's libsched side by side.
BENCHES += $(O)/bench/bench-sched-resume
$(O)/bench/bench-sched-resume: $(O)/obj/bench/sched-resume/resume.o $(O)/lib/libtsl-sched.a \
                               $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm
