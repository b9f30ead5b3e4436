#!/bin/sh
# t3142-shim-signals.t - tessel-shim gives the job every signal at its default, whatever the
# shim inherited, and pays for that only with the ignored ones: a shim started with SIGUSR1,
# SIGQUIT and SIGHUP ignored runs a job that ignores and blocks nothing, and the job's process
# makes a few rt_sigaction calls before its exec (for the signals not at their default in the
# shim), not one for each of the 64 signals (src/agent/shim.c, job_main).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
SHIM=$TESSEL_BUILD/bin/tessel-shim
[ -x "$SHIM" ] || missing "tessel-shim not built ($SHIM)"
[ "$(id -u)" = 0 ] || missing "root (the shim runs jobs as root here)"
command -v strace >/dev/null || missing "strace not installed"
command -v bash >/dev/null || missing "bash not installed"
T=$(mktemp -d /tmp/tessel-t3142.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -m 755 "$T/job"

# run_shim [STRACE_OUT]: the shim, from a shell that ignores three signals, the job printing
# its signal masks; with STRACE_OUT, under strace -f.
run_shim() {
    rm -f "$T/job/exit" "$T/job/stdout"
    bash -c 'trap "" USR1 QUIT HUP; exec "$@"' shim ${1:+strace -f -qq -o "$1"} "$SHIM" \
        --dir "$T/job" --cwd / -- /bin/grep -E '^Sig(Ign|Blk):' /proc/self/status
}
run_shim
is "$(cat "$T/job/exit" 2>/dev/null)" "exit 0" "the job ran"
is "$(tr -s '\t' ' ' <"$T/job/stdout" | sort | tr '\n' ' ')" \
    "SigBlk: 0000000000000000 SigIgn: 0000000000000000 " \
    "the job ignores and blocks no signal (the shim ignored USR1, QUIT, HUP, INT, TERM, PIPE)"

if [ "${TESSEL_SANITIZE:-0}" = 1 ]; then
    # ASan intercepts signal() and sigaction() with calls of its own.
    diag "sanitizer build: the job's process's system calls not counted"
    done_testing
    exit $?
fi
run_shim "$T/st"
is "$(cat "$T/job/exit" 2>/dev/null)" "exit 0" "the job ran under strace"
# The job's process: the pid that execs /bin/grep; its rt_sigaction calls before that exec.
jpid=$(awk '/execve\("\/bin\/grep"/ {print $1; exit}' "$T/st")
n=$(awk -v p="$jpid" '$1 == p && /execve\("\/bin\/grep"/ {exit} $1 == p && /rt_sigaction\(/ {n++} END {print n + 0}' "$T/st")
diag "rt_sigaction calls in the job's process before its exec: $n"
ok $([ -n "$jpid" ] && [ "$n" -ge 2 ] && [ "$n" -le 12 ] && echo 0 || echo 1) \
    "the job's process resets the ignored signals only: $n rt_sigaction calls, not 62"
done_testing
