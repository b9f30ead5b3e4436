# bench-history-fill: a week of usage history through the real write path, its store size
# against keeping every sample (bench/history/run.sh adds the week view's load time;
# docs/console.md, "Usage history: figures").  (Libraries named by path.)
BENCHES += $(O)/bench/bench-history-fill
$(O)/bench/bench-history-fill: $(O)/obj/bench/history/fill.o $(O)/obj/src/daemon/histagg.o \
                               $(O)/obj/src/daemon/histwrite.o $(O)/lib/libtsl-store.a \
                               $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lm
