#!/bin/sh
# t3141-interposer-load.t - a process that never calls CUDA or NVML pays for libtessel-cuda only
# the loader's mapping of it (every process of a job loads it: docs/interposer.md "Load cost"):
# no constructor of its own, no file opened, read or mapped, no thread, no environment or /proc
# read, even with a job's limits file, slice and fake driver in reach; its relocated data fits in
# one page (its symbol table's names need no relocation).  And the set-up still happens at the
# first CUDA call: a program that calls cuInit attaches the job's slice.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
command -v strace >/dev/null || missing "strace not installed"
command -v readelf >/dev/null || missing "readelf not installed"

relro=$(readelf -lW "$PRE" | awk '$1 == "GNU_RELRO" {print $6}')
ok $([ -n "$relro" ] && [ $((relro)) -le 4096 ] && echo 0 || echo 1) \
    "the data the loader relocates (RELRO) fits in one page: $((relro)) bytes"

if [ "${TESSEL_SANITIZE:-0}" = 1 ]; then
    # ASan's instrumentation adds its own module constructor, and its runtime, preloaded before
    # the library, makes its own system calls: both are checked in the optimised build.
    diag "sanitizer build: constructor and system calls not checked (ASan adds its own)"
    done_testing
    exit $?
fi

# The library's own start-up code: crt's frame_dummy is the one INIT_ARRAY entry (8 bytes); a
# constructor of ours would add one.
initsz=$(readelf -dW "$PRE" | awk '/INIT_ARRAYSZ/ {print $3}')
is "$initsz" 8 "no constructor of its own (INIT_ARRAYSZ $initsz bytes: crt's frame_dummy alone)"

# What a job's process has in reach: a limits file and a slice named in the environment.
export TESSEL_SLICE="$TMP/slice" TESSEL_CUDA_MEM_LIMIT=1G
# trace PRELOAD: the file, memory, process and IPC system calls of /bin/true, one a line, with
# the addresses, pids and descriptors left out (they differ from run to run).
trace() {
    LD_PRELOAD="$1" strace -qq -f -o "$TMP/st" \
        -e trace=%file,%memory,%process,%ipc,%desc,getrandom,uname /bin/true
    sed -E -e 's/0x[0-9a-f]+/ADDR/g' -e 's/= [0-9]+$/= N/' -e 's/^[0-9]+ +//' \
        -e '/^(exit_group|\+\+\+)/d' "$TMP/st"
}
trace "" >"$TMP/bare"
trace "$PRE" >"$TMP/pre"
# Lines the preload adds, and lines it removes (none should be removed either).
added=$(diff "$TMP/bare" "$TMP/pre" | sed -n 's/^> //p')
removed=$(diff "$TMP/bare" "$TMP/pre" | sed -n 's/^< //p')
diag "added by the preload: $(printf '%s' "$added" | tr '\n' '|')"
is "$removed" "" "nothing of the program's own start is changed"
ok $(printf '%s\n' "$added" | grep -q "libtessel-cuda.so" && echo 0 || echo 1) \
    "the loader opens the library"
# Beyond the loader's open/read/fstat/mmap/close/mprotect of the library: nothing.
other=$(printf '%s\n' "$added" | grep -v -E '^(openat\(AT_FDCWD, "[^"]*libtessel-cuda\.so"|read\(N|read\([0-9]+, "\\177ELF|newfstatat\([0-9]+, ""|mmap\(|close\([0-9]+\)|mprotect\(|munmap\()' |
    grep -v '^$')
is "$other" "" "no other system call: no limits file, slice, driver, /proc or thread"
ok $(grep -q -E 'limits|slice|libcuda|libnvidia|/proc' "$TMP/pre" && echo 1 || echo 0) \
    "no limits file, slice, driver or /proc named in the trace"

# The first CUDA call still sets everything up: cuInit attaches the job's slice.
LD_PRELOAD="$PRE" strace -qq -f -o "$TMP/st2" -e trace=openat "$PROBE" ctx >"$TMP/out" 2>&1
ok $(grep -q "$TMP/slice" "$TMP/st2" && echo 0 || echo 1) "cuInit attaches the job's slice"
done_testing
