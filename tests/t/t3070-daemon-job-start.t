#!/bin/sh
# t3070-daemon-job-start.t - the job's process started by tessel-shim through
# clone(CLONE_VM | CLONE_VFORK) (the shim's default) is the job the fork started: the same
# account (uid, gid, supplementary groups from the account database), its cgroup, its own mount
# namespace with /etc/ld.so.preload naming the interposer and the limits at /run/tessel/job,
# the seccomp filter against user namespaces, its cwd, environment and LD_PRELOAD, its own
# process group, its output in the logs; both ways report a failed start the same way
# ("error exec 2", "error chdir 13"); and the GPU-memory watchdog, which now loads NVML after
# its first period, still says in shim.log when it cannot, while the job runs on.
# Needs root (accounts, cgroups, namespaces).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (tesseld runs jobs as local accounts)"
local_account tslsa tslgrp
need $? "useradd/groupadd to create the account tslsa (in group tslgrp)"
SHIM="$TESSEL_BUILD/bin/tessel-shim"
PRELOAD_LIB="$TESSEL_BUILD/lib/libtessel-cuda.so"
[ -x "$SHIM" ] && [ -r "$PRELOAD_LIB" ]
need $? "tessel-shim and the interposer built in $TESSEL_BUILD"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G
api GET /v1/nodes
MODE=$(jget '.nodes[0].cgroups')
[ "$MODE" != none ]
need $? "usable cgroup controllers (v2, or v1 memory+cpu+freezer)"

UID_A=$(id -u tslsa) GID_A=$(id -g tslsa)
GROUPS_A=$(id -G tslsa | tr ' ' '\n' | sort -n | tr '\n' ' ')
# What the job reports about itself: one line per property.
PROBE='echo "ids $(id -u) $(id -g)"; echo "groups $(id -G | tr " " "\n" | sort -n | tr "\n" " ")"
echo "cwd $(pwd)"; echo "preload-file $(cat /etc/ld.so.preload)"
echo "limits $(test -r /run/tessel/job/limits && echo yes)"
echo "mntns $(readlink /proc/self/ns/mnt)"
echo "seccomp $(sed -n "s/^Seccomp:[[:space:]]*//p" /proc/self/status)"
echo "pgid-is-own $(test "$(ps -o pgid= -p $$ | tr -d " ")" = "$(ps -o pgid= -p $PPID | tr -d " ")" && echo no || echo yes)"
echo "env $T3070_CANARY $LD_PRELOAD"
echo "userns $(unshare -U true 2>/dev/null && echo allowed || echo refused)"
cat /proc/self/cgroup | sed "s/^/cgroup /"'
HOSTNS=$(readlink /proc/self/ns/mnt)

# Through tesseld: tslsa's job over the local socket.
BODY=$(jq -cn --arg p "$PROBE" '{argv:["sh","-c",$p],env:{T3070_CANARY:"c4n4ry"}}')
sock_api tslsa POST /v1/jobs "$BODY"
is "$CODE" 201 "tslsa submits a job"
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = succeeded ]'
ok $? "tslsa's job succeeds"
OUT="$TD/data/jobs/$J/stdout"
is "$(sed -n 's/^ids //p' "$OUT")" "$UID_A $GID_A" "the job runs as tslsa's uid and gid"
is "$(sed -n 's/^groups //p' "$OUT")" "$GROUPS_A" "with tslsa's supplementary groups ($GROUPS_A)"
is "$(sed -n 's/^cwd //p' "$OUT")" "$TD/data/jobs/$J" "in its job directory"
is "$(sed -n 's/^preload-file //p' "$OUT")" "$PRELOAD_LIB" \
    "/etc/ld.so.preload names the interposer in the job's namespace"
is "$(sed -n 's/^limits //p' "$OUT")" yes "its limits are at /run/tessel/job/limits"
MNT=$(sed -n 's/^mntns //p' "$OUT")
ok "$([ -n "$MNT" ] && [ "$MNT" != "$HOSTNS" ]; echo $?)" \
    "in a mount namespace of its own ($MNT, the host's $HOSTNS)"
is "$(sed -n 's/^seccomp //p' "$OUT")" 2 "under the seccomp filter"
is "$(sed -n 's/^userns //p' "$OUT")" refused "which refuses it a user namespace"
is "$(sed -n 's/^pgid-is-own //p' "$OUT")" yes "in a process group of its own, not the shim's"
is "$(sed -n 's/^env //p' "$OUT")" "c4n4ry $PRELOAD_LIB" "with its environment and LD_PRELOAD"
grep -q "^cgroup .*job-$J" "$OUT"
ok $? "in its cgroup (job-$J)"
is "$(stat -c %U "$OUT")" tslsa "its log is tslsa's"
api GET "/v1/jobs/$J"
is "$(jget .state) $(jget .exit_code)" "succeeded 0" "the shim records its end, tesseld reads it"
ok "$([ ! -e "$TD/data/jobs/$J/exit" ]; echo $?)" \
    "in tesseld's own directory (its start lock starts/$J.lock, read and removed), not in the job's"

# The shim by hand, the same job both ways: clone (default) and fork (--test-fork).
STATE="$TD/state"
mkdir -m 755 "$STATE"
echo "$PRELOAD_LIB" >"$STATE/ld.so.preload"
echo "0 1G" >"$STATE/limits"
run_shim() { # run_shim NAME [SHIM-OPTION...] -- PROG ARG...: runs in $TD/NAME
    _d="$TD/$1"
    shift
    mkdir -m 700 "$_d" && chown tslsa:tslsa "$_d"
    printf 'T3070_CANARY=c4n4ry\0PATH=/usr/bin:/bin\0' >"$_d.env"
    # The sanitizers' options, as tesseld passes them to its jobs (an ASan interposer needs
    # them in a program built without ASan).
    for _v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
        eval "[ -n \"\${$_v:-}\" ] && printf '%s=%s\\0' $_v \"\$$_v\"" >>"$_d.env"
    done
    "$SHIM" --env-fd 5 --dir "$_d" --uid "$UID_A" --gid "$GID_A" --user tslsa \
        --preload "$PRELOAD_LIB" --state "$STATE" --block-userns "$@" 5<"$_d.env"
}
run_shim clone --cwd /tmp -- sh -c "$PROBE"
is "$?" 0 "tessel-shim (clone) runs the job and records its end"
run_shim fork --cwd /tmp --test-fork -- sh -c "$PROBE"
is "$?" 0 "tessel-shim --test-fork runs it too"
is "$(cat "$TD/clone/exit")" "exit 0" "clone: the job exits 0"
grep -v -e '^mntns ' -e '^cgroup ' "$TD/clone/stdout" >"$TD/clone.props"
grep -v -e '^mntns ' -e '^cgroup ' "$TD/fork/stdout" >"$TD/fork.props"
is "$(sed -n 's/^ids //p' "$TD/clone.props") / $(sed -n 's/^groups //p' "$TD/clone.props")" \
    "$UID_A $GID_A / $GROUPS_A" "clone: tslsa's ids and groups"
cmp -s "$TD/clone.props" "$TD/fork.props"
ok $? "clone and fork give the job the same ids, groups, cwd, namespace files, filter, env"
[ -s "$TD/clone.props" ] || diag "clone gave nothing"
cmp -s "$TD/clone.props" "$TD/fork.props" || diff "$TD/clone.props" "$TD/fork.props" | sed 's/^/# /'
is "$(wc -l <"$TD/clone.props")" 9 "all 9 properties reported"

run_shim noexec-c --cwd /tmp -- /nonexistent/t3070
run_shim noexec-f --cwd /tmp --test-fork -- /nonexistent/t3070
is "$(cat "$TD/noexec-c/exit") / $(cat "$TD/noexec-f/exit")" "error exec 2 / error exec 2" \
    "a program that does not exist: 'error exec 2' both ways"
mkdir -m 700 "$TD/closed"
run_shim nocwd-c --cwd "$TD/closed" -- true
run_shim nocwd-f --cwd "$TD/closed" --test-fork -- true
is "$(cat "$TD/nocwd-c/exit") / $(cat "$TD/nocwd-f/exit")" "error chdir 13 / error chdir 13" \
    "a cwd tslsa cannot enter: 'error chdir 13' both ways"
is "$(stat -c %U "$TD/nocwd-c/stdout") $(stat -c %U "$TD/nocwd-f/stdout")" "tslsa tslsa" \
    "both opened the logs as tslsa before the chdir"

# --preload-list (tesseld's run/ld.so.preload, one file for every job since 2026-11-28): the
# file bound at the job's /etc/ld.so.preload is that one, not STATE's (gone here); a list others
# may write, or a link to one, is refused before the job runs.
LIST="$TD/list"
echo "$PRELOAD_LIB" >"$LIST" && chmod 644 "$LIST"
mv "$STATE/ld.so.preload" "$TD/state.preload"
run_shim plist --cwd /tmp --preload-list "$LIST" -- cat /etc/ld.so.preload
is "$(cat "$TD/plist/exit") / $(cat "$TD/plist/stdout")" "exit 0 / $PRELOAD_LIB" \
    "--preload-list: the job's /etc/ld.so.preload is that file"
chmod 666 "$LIST"
run_shim plist-w --cwd /tmp --preload-list "$LIST" -- true
is "$(cat "$TD/plist-w/exit")" "error jobns 1" "a list others may write is refused (EPERM)"
chmod 664 "$LIST"
run_shim plist-g --cwd /tmp --preload-list "$LIST" -- true
is "$(cat "$TD/plist-g/exit")" "error jobns 1" "a list its group may write is refused (EPERM)"
chmod 644 "$LIST"
chown nobody "$LIST"
run_shim plist-o --cwd /tmp --preload-list "$LIST" -- true
is "$(cat "$TD/plist-o/exit")" "error jobns 1" "a list another account owns is refused (EPERM)"
chown root "$LIST"
ln -s "$LIST" "$TD/list-link"
run_shim plist-l --cwd /tmp --preload-list "$TD/list-link" -- true
is "$(cat "$TD/plist-l/exit")" "error jobns 1" "a link to one is refused (EPERM)"
mv "$TD/state.preload" "$STATE/ld.so.preload"

# The watchdog with a library that is not NVML: said in shim.log once its first period is
# over, and the job (sleeping past it) runs to its end.
run_shim badnvml --cwd /tmp --nvml /bin/true --gpu-mem-limit "" -- sleep 1 2>"$TD/badnvml.log"
is "$(cat "$TD/badnvml/exit")" "exit 0" "with an unusable NVML the job still ends normally"
grep -q "GPU-memory watchdog not started: /bin/true" "$TD/badnvml.log"
ok $? "and the shim says the watchdog did not start"

td_stop
done_testing
