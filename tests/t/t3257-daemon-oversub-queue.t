#!/bin/sh
# t3257-daemon-oversub-queue.t - a queue's gpu_mem_oversubscribe (issue 21 item 4, "per job or
# queue"; docs/interposer.md "A queue's setting"; migration 25).  Queue org says 1G; its child
# lab says nothing and takes org's (the API's gpu_mem_oversubscribe, _own null, _from org;
# `tessel queues`'s OVERSUB column "1.00 GiB(org)" and --json), its child big says 2G, its
# child ops says 0 (none) and ops's child keeps none; a top-level queue that inherits has none.
# lab set and back to inherit through the API and `tessel queues set`.  Bad values: 400
# (`tessel queues` exit 2) with nothing changed.  A job that does not ask gets its queue's
# value in effect (the job object says it, the root-owned limits file of its slice carries
# it) where the checks of a job's own value pass: not without a GPU, not past its mem or the
# node's memory, and (with cgroups) not without mem.  A user who asks more than the queue's
# value is refused 422 naming the queue, its value and where it is set, nothing stored; less,
# 0 (none) and the queue's own value are accepted; an admin may ask more.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot write the root-owned limits file"

td_setup
td_start --fake-gpus 2xT4:16G --no-cgroups --allow-root-jobs --submit-rate 0 ||
    missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
GiB=1073741824
q() { api GET "/v1/queues/$1" && jq -r '"\(.gpu_mem_oversubscribe) \(.gpu_mem_oversubscribe_own) \(.gpu_mem_oversubscribe_from)"' "$TD/out"; }
njobs() { api GET '/v1/jobs?limit=1000' && jq '.jobs | length' "$TD/out"; }

# --- inheritance ---------------------------------------------------------------------------
api POST /v1/queues '{"name":"org","gpu_mem_oversubscribe":"1G"}'
is "$CODE $(jget .gpu_mem_oversubscribe) $(jget .gpu_mem_oversubscribe_own) $(jget .gpu_mem_oversubscribe_from)" \
    "201 $GiB $GiB org" "org: 1G, its own"
api POST /v1/queues '{"name":"lab","parent":"org"}'
is "$CODE $(q lab)" "201 $GiB null org" "lab, which says nothing, takes org's 1G (own null, from org)"
api POST /v1/queues "{\"name\":\"big\",\"parent\":\"org\",\"gpu_mem_oversubscribe\":$((2 * GiB))}"
is "$(q big)" "$((2 * GiB)) $((2 * GiB)) big" "big's own 2G (in bytes) wins over org's"
api POST /v1/queues '{"name":"ops","parent":"org","gpu_mem_oversubscribe":0}'
is "$(q ops)" "0 0 ops" "ops says 0: none, its own"
api POST /v1/queues '{"name":"opskid","parent":"ops"}'
is "$(q opskid)" "0 null ops" "ops's child keeps ops's none"
api POST /v1/queues '{"name":"solo"}'
is "$(q solo)" "0 null null" "a top-level queue that says nothing: none, from no queue"
is "$(q default)" "0 null null" "so does the default queue"

tcli queues
is "$RC" 0 "tessel queues lists the tree"
grep -q "^  lab .* 1.00 GiB(org) " "$TD/o"; ok $? "lab's OVERSUB is 1.00 GiB(org)"
grep -q "^  big .* 2.00 GiB " "$TD/o"; ok $? "big's OVERSUB is its own 2.00 GiB"
grep -q "^    opskid .* none(ops) " "$TD/o"; ok $? "opskid's OVERSUB is none(ops)"
grep -q "^solo .* - *all$" "$TD/o"; ok $? "solo's OVERSUB is -"
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "lab") | "\(.gpu_mem_oversubscribe) \(.gpu_mem_oversubscribe_from)"' "$TD/o")" \
    "$GiB org" "tessel queues --json: lab's value in effect and where it is set"

api PATCH /v1/queues/org '{"gpu_mem_oversubscribe":"3G"}'
is "$CODE $(q lab)" "200 $((3 * GiB)) null org" "org set to 3G: lab takes it at once"
api PATCH /v1/queues/lab '{"gpu_mem_oversubscribe":"512M"}'
is "$CODE $(q lab)" "200 $((GiB / 2)) $((GiB / 2)) lab" "lab set to 512M: its own"
api PATCH /v1/queues/lab '{"gpu_mem_oversubscribe":"inherit"}'
is "$CODE $(q lab)" "200 $((3 * GiB)) null org" "lab back to inherit (\"inherit\"): org's again"
tcli queues set lab --gpu-mem-oversubscribe 256M
is "$RC:$(q lab)" "0:$((GiB / 4)) $((GiB / 4)) lab" "tessel queues set lab --gpu-mem-oversubscribe 256M"
tcli queues set lab --gpu-mem-oversubscribe inherit
is "$RC:$(q lab)" "0:$((3 * GiB)) null org" "tessel queues set lab --gpu-mem-oversubscribe inherit"
api PATCH /v1/queues/big '{"gpu_mem_oversubscribe":null}'
is "$CODE $(q big)" "200 $((3 * GiB)) null org" "null is inherit too"
tcli queues add side --parent org --gpu-mem-oversubscribe 0
is "$RC:$(q side)" "0:0 0 side" "tessel queues add --gpu-mem-oversubscribe 0: none, its own"
api PATCH /v1/queues/big '{"gpu_mem_oversubscribe":"2G"}'
api PATCH /v1/queues/org '{"gpu_mem_oversubscribe":"1G"}'
is "$(q lab) / $(q big)" "$GiB null org / $((2 * GiB)) $((2 * GiB)) big" "org back to 1G, big to 2G"

# --- bad values: refused, nothing changed --------------------------------------------------
for bad in '"lots"' '-5' '"inherits"' 'true' '1.5' '"8"' '{}'; do
    api PATCH /v1/queues/lab "{\"gpu_mem_oversubscribe\":$bad}"
    is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_value gpu_mem_oversubscribe" \
        "gpu_mem_oversubscribe $bad refused: $(jget .error.message)"
done
is "$(q lab)" "$GiB null org" "lab unchanged"
api POST /v1/queues '{"name":"badq","parent":"org","gpu_mem_oversubscribe":"lots"}'
is "$CODE $(jget .error.field)" "400 gpu_mem_oversubscribe" "a new queue with a bad value: 400"
api GET /v1/queues/badq
is "$CODE" 404 "and it was not made"
tcli queues set lab --gpu-mem-oversubscribe bogus
is "$RC" 2 "tessel queues set --gpu-mem-oversubscribe bogus exits 2: $(head -1 "$TD/e")"
is "$(q lab)" "$GiB null org" "lab still unchanged"
ATOK=$(token_of alice)
api PATCH /v1/queues/lab '{"gpu_mem_oversubscribe":"64G"}' "$ATOK"
is "$CODE $(q lab)" "403 $GiB null org" "a user may not set it (403), nothing changed"

# --- the queue's value is the most a user's job may ask ------------------------------------
BEFORE=$(njobs)
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":"2G"}' "$ATOK"
is "$CODE $(jget .error.code) $(jget .error.field)" "422 unsatisfiable gpu_mem_oversubscribe" \
    "alice's 2G in lab (1G from org) is refused"
is "$(jget .error.message)" \
    "gpu_mem_oversubscribe 2.00 GiB is above queue 'lab''s gpu_mem_oversubscribe of 1.00 GiB per GPU, from its parent queue 'org', the most its jobs may ask: ask 1.00 GiB or less, or leave it out (its queue's); only an admin may submit a job with more" \
    "naming the queue, its value and where it is set"
api POST /v1/jobs '{"argv":["true"],"queue":"big","gpu":0.5,"gpu_mem_oversubscribe":"3G"}' "$ATOK"
jget .error.message | grep -q "above queue 'big''s gpu_mem_oversubscribe of 2.00 GiB per GPU, the most"
ok $? "3G in big (its own 2G) is refused, with no parent named"
TESSEL_TOKEN=$ATOK tcli run -d --queue lab --gpu 0.5 --gpu-mem-oversubscribe 2G true
[ "$RC" -ne 0 ] && grep -q "above queue 'lab'" "$TD/e"
ok $? "tessel run --gpu-mem-oversubscribe 2G in lab fails ($RC): $(head -1 "$TD/e")"
is "$(njobs)" "$BEFORE" "nothing was stored"

api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":"512M"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $((GiB / 2))" "less (512M) is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":"1G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "the queue's own value (1G) is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":0}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "0: none, not the queue's"
TESSEL_TOKEN=$ATOK tcli run -d --queue lab --gpu 0.5 --gpu-mem-oversubscribe 0 --json true
is "$RC $(jq -r .gpu_mem_oversubscribe "$TD/o")" "0 null" "tessel run --gpu-mem-oversubscribe 0: none too"
api POST /v1/jobs '{"argv":["true"],"queue":"solo","gpu":0.5,"gpu_mem_oversubscribe":"4G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $((4 * GiB))" "any value in a queue with none set"
api POST /v1/jobs '{"argv":["true"],"queue":"opskid","gpu":0.5,"gpu_mem_oversubscribe":"4G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $((4 * GiB))" "and in one whose value is none (0 bounds nothing)"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":"4G"}'
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $((4 * GiB))" "an admin may ask more than lab's"

# --- the default of a job that does not ask ------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "a job of lab that does not ask gets org's 1G"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":null}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "null asks the queue's too"
TESSEL_TOKEN=$ATOK tcli run -d --queue big --gpu 0.5 --json true
is "$RC $(jq -r .gpu_mem_oversubscribe "$TD/o")" "0 $((2 * GiB))" "tessel run in big: big's 2G"
api POST /v1/jobs '{"argv":["true"],"queue":"lab"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "a job without a GPU gets none"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpus":2,"mem":"1G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "2 GPUs x 1G past its 1G of mem: none"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpus":2,"mem":"4G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "2 GPUs x 1G within its 4G of mem: the default"
api POST /v1/jobs '{"argv":["true"],"queue":"opskid","gpu":0.5}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "a job of opskid (none, from ops) gets none"
api PATCH /v1/queues/side '{"gpu_mem_oversubscribe":"1P"}'
api POST /v1/jobs '{"argv":["true"],"queue":"side","gpu":0.5}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "a default past the node's memory (1P) is not given"

# The default reaches the slice: the root-owned limits file tesseld writes for the job.
api POST /v1/jobs '{"argv":["sleep","60"],"queue":"lab","gpu":0.5}'
S=$(jget .id)
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "an admin's job of lab that does not ask: 1G"
wait_for '[ "$(job_state $S)" = running ] && [ -s "$TD/data/run/'"$S"'/limits" ]'
ok $? "it runs, with its limits file"
grep -q "^TESSEL_CUDA_MEM_OVERSUBSCRIBE=$GiB\$" "$TD/data/run/$S/limits"
ok $? "its limits file carries TESSEL_CUDA_MEM_OVERSUBSCRIBE=$GiB"
api POST "/v1/jobs/$S/cancel"
wait_for '[ "$(job_state $S)" = cancelled ]'; ok $? "cancelled"
td_stop; ok $? "tesseld stops cleanly (no cgroups)"

# --- with cgroups: a job without mem gets no default (its cgroup is the bound) --------------
td_start --fake-gpus 2xT4:16G --allow-root-jobs --submit-rate 0 || missing "tesseld did not start"
api GET /v1/nodes
[ "$(jget '.nodes[0].cgroups')" = none ] &&
    missing "no usable cgroup controllers (neither v2 nor v1 memory+cpu+freezer)"
is "$(q lab)" "$GiB null org" "the setting is kept across a restart"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "with cgroups, a job without mem: accepted, none"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"mem":"2G"}' "$ATOK"
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 $GiB" "with mem: the default"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","gpu":0.5,"gpu_mem_oversubscribe":"512M"}' "$ATOK"
is "$CODE $(jget .error.field)" "400 mem" "its own value without mem is still refused (400 mem)"
td_stop; ok $? "tesseld stops cleanly"
done_testing
