# bench-term-echo: a keystroke's echo through a job's terminal (docs/terminal.md, "Measured");
# bench/term/run.sh drives it.
BENCHES += $(O)/bench/bench-term-echo
$(O)/bench/bench-term-echo: $(O)/obj/bench/term/echo.o $(O)/lib/libtsl-client.a \
                            $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -ljansson -lpthread -ldl
