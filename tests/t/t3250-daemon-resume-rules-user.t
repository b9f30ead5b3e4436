#!/bin/sh
# t3250-daemon-resume-rules-user.t - t3240's queue limit for a job of an unprivileged account
# (docs/suspend.md, "Resumes, queue limits and pending jobs"): job A of the local account
# tslidx (tesseld runs it as that account, not root) in queue lab (half a GPU, idle time 3 s)
# holds 512 MiB with a pattern and is reclaimed while idle; job B of lab, never reclaimed, takes
# lab's half.  A's own CUDA call asks for its GPU and waits, A's reason naming lab's limit;
# once B ends A is restored and the call goes on.  Reclaimed again, with job C in lab's half,
# A's resume asked by tslidx itself (`tessel resume` with tslidx's own token) waits the same
# way and A is restored once C ends; every byte of A's pattern is back each time.  tslidx
# cannot resume another user's job (exit 1, 404: the job stays suspended).  Needs root (a
# local account).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ "$(id -u)" = 0 ] || missing "root (tesseld runs the job as a local account)"
local_account tslidx || missing "useradd to create the account tslidx"
ckpt_start
chmod 755 "$TD"
chmod 777 "$G"
chmod 666 "$TESSEL_FAKE_STATE"
U=$(token_of tslidx)
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$U" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
LIMIT="queue 'lab' is at its limit of 0.5 GPU: it uses 0.5 GPU, the job takes 0.5 GPU"
reason() { api GET "/v1/jobs/$1" "" "$U" && jget .reason; }

api POST /v1/queues '{"name":"lab","max_gpu_milli":500,"idle_reclaim":"3s"}'
is "$CODE $(jget .max_gpu_milli) $(jget .idle_reclaim)" "201 500 3" \
    "queue lab may hold half a GPU, its jobs idle for 3 s give their GPU memory back"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/a\",\"modload\",\"check:512M\",\"waitfile:$G/a2\",\"launch:k\",\"check:512M\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}" "$U"
A=$(jget .id)
is "$CODE $(jget .user)" "201 tslidx" "job A of the account tslidx is submitted"
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "A (lab, half a GPU) holds 512 MiB with its pattern"
PA=$(read -r _ _ _jp <"$TD/data/jobs/$A/pid" && echo "$_jp")
is "$(stat -c %U "/proc/$PA" 2>/dev/null)" tslidx "A's process ($PA) runs as tslidx"
wait_for "api GET /v1/jobs/$A && [ \"\$(jget .suspended_reason)\" = idle ]"
ok $? "A, idle, is reclaimed"

# --- A's own CUDA call ---------------------------------------------------------------------
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"modload\",\"launch:k\",\"waitfile:$G/b\"],\"gpu\":0.5,\"queue\":\"lab\",\"idle_reclaim\":\"off\",$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^launch k rc=0'"; ok $? "job B of lab (never reclaimed) takes lab's half"
touch "$G/a" # A's next CUDA call: a module load
wait_for "reason $A | grep -qF \"$LIMIT\""
ok $? "A's call asked for its GPU and waits for lab's limit: $(jget .reason)"
is "$(job_state "$A" "$U")" suspended "A stays suspended while B runs (as tslidx sees it)"
logs "$A" | grep -q '^modload'; is $? 1 "A's call has not gone on"
touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for "logs $A | grep -q '^check ok'"; ok $? "A is restored, its call goes on, its pattern is back"
logs "$A" | grep -q '^modload rc=0$'; ok $? "A's module load succeeded after the restore"

# --- tessel resume with tslidx's own token -------------------------------------------------
wait_for "api GET /v1/jobs/$A && [ \"\$(jget .suspended_reason)\" = idle ]"
ok $? "A, idle again for 3 s, is reclaimed again"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"modload\",\"launch:k\",\"waitfile:$G/c\"],\"gpu\":0.5,\"queue\":\"lab\",\"idle_reclaim\":\"off\",$ENV}"
C=$(jget .id)
wait_for "logs $C | grep -q '^launch k rc=0'"; ok $? "job C of lab takes lab's half"
cli resume "$A" >"$TD/res" 2>&1
is "$? $(cat "$TD/res")" "0 job $A: resume asked (resume asked: waiting for its GPU)" \
    "tslidx's tessel resume of A: asked"
wait_for "reason $A | grep -qF \"$LIMIT\""
ok $? "A waits for lab's limit: $(jget .reason)"
is "$(job_state "$A" "$U")" suspended "A stays suspended while C runs"
grep -q "job $A: waiting for .*($LIMIT)" "$TD/tesseld.log"; ok $? "tesseld's log says it too"
touch "$G/c"
wait_for '[ "$(job_state $C)" = succeeded ]'; ok $? "C ends"
wait_for '[ "$(job_state $A "$U")" = running ]'; ok $? "A is restored once lab's limit allows it"
api GET "/v1/jobs/$A/events" "" "$U"
is "$(jq -r '[.events[] | select(.event == "resume")] | .[-1].who' "$TD/out")" tslidx \
    "its last resume is tslidx's"
touch "$G/a2"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
is "$(logs "$A" | grep -c '^check ok')" 2 "its pattern was intact after each restore"

# --- not another user's job ----------------------------------------------------------------
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"pattern:256M\",\"waitfile:$G/o\",\"check:256M\"],\"gpu\":0.5,$ENV}"
O=$(jget .id)
wait_for "logs $O | grep -q '^pattern rc=0'"; ok $? "job O of the admin holds 256 MiB"
api POST "/v1/jobs/$O/suspend"
is "$CODE $(jget .state)" "200 suspended" "the admin suspends O"
cli resume "$O" >"$TD/res" 2>&1
is "$?" 1 "tslidx's tessel resume of O exits 1: $(cat "$TD/res")"
api POST "/v1/jobs/$O/resume" "" "$U"
is "$CODE $(jget .error.code)" "404 not_found" "tslidx's POST .../resume of O: 404"
is "$(job_state "$O")" suspended "O stays suspended"
api POST "/v1/jobs/$O/resume"
wait_for '[ "$(job_state $O)" = running ]'; ok $? "the admin's resume restores O"
touch "$G/o"
wait_for '[ "$(job_state $O)" = succeeded ]'; ok $? "O ends"
logs "$O" | grep -q '^check ok'; ok $? "every byte of O's pattern is back"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
