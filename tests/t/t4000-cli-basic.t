#!/bin/sh
# t4000-cli-basic.t - the `tessel` CLI against tesseld on loopback with a fake GPU: help and
# usage errors, login (config file mode 0600, TESSEL_URL / TESSEL_TOKEN override), run in the
# foreground (output streamed, exit status = the job's, 128+signal, 124 cancelled, 125 never
# started, Ctrl-C cancels) and detached, ps, logs (-f, --json as JSON Lines), kill, gpus, queues,
# users, tokens, and --json everywhere.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups || missing "tesseld did not start"
cli_setup
G="$TD/go"
mkdir -p "$G"

# --- help and usage -------------------------------------------------------------------------
tcli --help
is "$RC" 0 "tessel --help exits 0"
grep -q '^  run ' "$TD/o" && grep -q '^  gpus ' "$TD/o"; ok $? "--help lists the commands"
tcli run --help
is "$RC $(grep -c -- '^  --gpu-mem ' "$TD/o") $(grep -c -- '^  --gpu-mem-oversubscribe ' "$TD/o")" "0 1 1" \
    "tessel run --help documents --gpu-mem and --gpu-mem-oversubscribe"
tcli
is "$RC" 2 "no command: exit 2"
tcli frobnicate
is "$RC" 2 "an unknown command: exit 2"
one_line_error; ok $? "... with one line on stderr"

# --- login ----------------------------------------------------------------------------------
tcli whoami
is "$RC" 1 "before login, nothing answers at the default URL (or no token): exit 1"
tcli login --data-dir "$TD/data"
is "$RC" 0 "tessel login --data-dir DIR (local admin token and address)"
is "$(stat -c %a "$TD/config")" 600 "the config file has mode 0600"
grep -q "^url = $TD_URL\$" "$TD/config"; ok $? "it keeps tesseld's URL"
grep -q "^token = $TD_ADMIN\$" "$TD/config"; ok $? "and the token"
tcli whoami
is "$RC $(out)" "0 admin (admin) at $TD_URL" "whoami uses the saved config"
tcli whoami --json
is "$(jq -r .user "$TD/o")" "admin" "whoami --json prints the API's JSON"
tcli --json whoami
is "$(jq -r .role "$TD/o")" "admin" "--json may come before the command"
TESSEL_URL=http://127.0.0.1:1 tcli whoami
is "$RC" 1 "TESSEL_URL overrides the saved URL (nothing listens on port 1)"
one_line_error && grep -q 'cannot reach tesseld at http://127.0.0.1:1' "$TD/e"
ok $? "... with one line: $(errtext)"
TESSEL_TOKEN=tsl_0000000000000000000000000000000000000000000000000000000000000000 tcli whoami
is "$RC" 1 "TESSEL_TOKEN overrides the saved token (an unknown one: refused)"
one_line_error && grep -q 'token' "$TD/e"; ok $? "... with one line: $(errtext)"
echo "$TD_ADMIN" | "$TCLI" login --url "$TD_URL" >"$TD/o" 2>"$TD/e"
is "$?" 0 "login reads the token from stdin"
tcli login --url "$TD_URL" --token tsl_bad
is "$RC" 1 "login refuses a token tesseld does not know"
grep -q "^token = $TD_ADMIN\$" "$TD/config"; ok $? "and keeps the previous config"

# --- run in the foreground ------------------------------------------------------------------
tcli run -- sh -c 'echo out1; echo err1 >&2; echo out2; exit 3'
is "$RC" 3 "run exits with the job's exit code (3)"
is "$(out | tr '\n' ' ')" "out1 out2 " "the job's stdout comes on stdout"
is "$(errtext | tr '\n' ' ')" "err1 " "the job's stderr comes on stderr"
tcli run --quiet true
is "$RC $(out)" "0 " "a job that succeeds: exit 0"
tcli run -- sh -c 'kill -9 $$'
is "$RC" 137 "a job killed by SIGKILL: exit 128+9"
tcli run -- /nonexistent/program
is "$RC" 125 "a job that cannot start: exit 125"
one_line_error && grep -q 'could not start' "$TD/e"; ok $? "... with one line: $(errtext)"
tcli run --shell -- 'echo "$((6 * 7))"'
is "$RC $(out)" "0 42" "--shell runs one string with /bin/sh -c"
tcli run -e GREETING=hello -- sh -c 'echo $GREETING from $(pwd)'
is "$(out)" "hello from $(pwd)" "-e sets the environment; the job runs in the current directory"
tcli run --gpu 0.5 --gpu-mem 2G -- sh -c 'echo $CUDA_VISIBLE_DEVICES $TESSEL_CUDA_MEM_LIMIT'
is "$RC $(out)" "0 0 2147483648" "a 0.5-GPU job sees its GPU and its 2 GiB limit"

# A foreground run that another `tessel kill` cancels, and one that Ctrl-C cancels.
"$TCLI" run --name victim -- sh -c 'echo started; sleep 300' >"$TD/v.o" 2>"$TD/v.e" &
VPID=$!
wait_for 'grep -qs started "$TD/v.o"'
V=$(TESSEL_URL=$TD_URL TESSEL_TOKEN=$TD_ADMIN "$TCLI" ps --json | jq -r '.jobs[] | select(.name == "victim") | .id')
tcli kill "$V"
is "$RC $(out)" "0 job $V: cancelling" "tessel kill cancels a running job"
wait "$VPID"
is "$?" 124 "the foreground run of a cancelled job exits 124"
"$TCLI" run --name ctrlc -- sh -c 'echo started; sleep 300' >"$TD/c.o" 2>"$TD/c.e" &
CPID=$!
wait_for 'grep -qs started "$TD/c.o"'
C=$(TESSEL_URL=$TD_URL TESSEL_TOKEN=$TD_ADMIN "$TCLI" ps --json | jq -r '.jobs[] | select(.name == "ctrlc") | .id')
kill -INT "$CPID"
wait "$CPID"
is "$?" 124 "Ctrl-C (SIGINT) on a foreground run cancels the job: exit 124"
is "$(state_of "$C")" "cancelled" "the job is cancelled"

# --- detached, ps, logs ---------------------------------------------------------------------
tcli run -d --name held --gpu 0.5 --gpu-mem 8G -- sh -c "echo begin; while [ ! -e $G/h ]; do sleep 0.05; done; echo done >&2"
H=$(out)
case "$H" in '' | *[!0-9]*) r=1 ;; *) r=0 ;; esac
ok $r "run -d prints the job id ($H)"
wait_for '[ "$(state_of $H)" = running ]'; ok $? "the detached job runs"
tcli run -d --json --gpu 1 --priority 7 --class inference -- true
is "$(jq -r '.state, .gpu_milli, .priority, .class' "$TD/o" | tr '\n' ' ')" "pending 1000 7 inference " \
    "run -d --json prints the submitted job object"
P=$(jq -r .id "$TD/o")
tcli ps
is "$RC" 0 "ps"
head -n 1 "$TD/o" | grep -q '^ *ID  USER  *NAME  *STATE'; ok $? "ps prints a table with a header"
grep -E "^ *$H  admin  held  running .* 0\.5  8\.00 GiB  gpu0 " "$TD/o" >/dev/null
ok $? "ps shows the running job: share 0.5, 8.00 GiB, on gpu0"
grep -E "^ *$P  admin .* pending " "$TD/o" >/dev/null; ok $? "and the pending one"
grep -qE "^ *$V " "$TD/o"; is "$?" 1 "ps leaves out finished jobs"
tcli ps -a
grep -qE "^ *$V  admin  victim  cancelled " "$TD/o"; ok $? "ps -a shows them"
tcli ps --json
is "$(jq -r '[.jobs[].state] | unique | join(",")' "$TD/o")" "pending,running" "ps --json: the active jobs"
tcli logs -f "$H" &
LPID=$!
touch "$G/h"
wait "$LPID"
is "$?" 0 "logs -f follows a job to its end"
tcli logs "$H"
is "$(out) / $(errtext)" "begin / done" "logs prints stdout and stderr"
tcli logs --stderr "$H"
is "$(out)/$(errtext)" "/done" "logs --stderr prints only stderr"
tcli logs --json "$H"
is "$RC/$(errtext)" "0/" "logs --json"
is "$(jq -s length "$TD/o")" "$(wc -l <"$TD/o")" "... prints one JSON object per line"
is "$(jq -s -c 'map(has("stream") and (.offset | type) == "number" and (.data | type) == "string") | unique' "$TD/o")" \
    "[true]" "... each with stream, offset and data"
is "$(jq -j 'select(.stream == "stdout") | .data' "$TD/o")/$(jq -j 'select(.stream == "stderr") | .data' "$TD/o")" \
    "begin/done" "... containing the job's stdout and stderr"
tcli logs --json --stdout "$H"
is "$(jq -r '"\(.stream) \(.offset) \(.data)"' "$TD/o")" "stdout 0 begin" "logs --json --stdout: only stdout, from offset 0"
tcli run -d -- printf 'caf\303\251\nbad\377\nend'
B=$(out)
wait_for '[ "$(state_of $B)" = succeeded ]'
tcli logs --json "$B"
is "$(jq -a -s -c 'map([.offset, .data, .data_base64])' "$TD/o")" \
    '[[0,"caf\u00e9\n",null],[6,"bad\ufffd\n","YmFk/wo="],[11,"end",null]]' \
    "logs --json: invalid UTF-8 replaced in data, exact bytes in data_base64; last line without newline"

# --- gpus, kill -----------------------------------------------------------------------------
wait_for '[ "$(state_of $P)" = running ] || [ "$(state_of $P)" = succeeded ]'
tcli run -d --name sleeper --gpu 0.5 --gpu-mem 6G -- sleep 300
S=$(out)
wait_for '[ "$(state_of $S)" = running ]'
tcli gpus
is "$RC" 0 "gpus"
grep -qE '^ *0  Fake RTX4090  24\.0 GiB  +1  +0\.5 .* 6\.00 GiB .* simulated$' "$TD/o"
ok $? "gpus: GPU 0, 24 GiB, one slice, 0.5 allocated, 6 GiB of limits, simulated"
grep -qE "^ *0  +$S  admin  +0\.5 .* 6\.00 GiB" "$TD/o"; ok $? "gpus lists the job's slice"
grep -q 'SIMULATED' "$TD/o"; ok $? "simulated GPUs are labelled"
tcli gpus --json
is "$(jq -r '.gpus[0].slices[0].job_id, .gpus[0].simulated' "$TD/o" | tr '\n' ' ')" "$S true " \
    "gpus --json prints the API's JSON"
tcli kill --json "$S"
is "$(jq -r '.[0].id' "$TD/o")" "$S" "kill --json prints the job objects"
wait_for '[ "$(state_of $S)" = cancelled ]'; ok $? "the killed job ends cancelled"
tcli kill "$S"
is "$RC" 1 "killing a finished job: exit 1"
one_line_error; ok $? "... with one line: $(errtext)"

# --- queues, users, tokens ------------------------------------------------------------------
tcli queues add big --priority 10 --max-gpu 1.5
is "$RC $(out)" "0 queue big created" "queues add"
tcli queues
grep -qE '^big  +1  +0/-/1\.5  ' "$TD/o"; ok $? "queues lists it: weight 1, GPU cap 1.5 (the old --max-gpu)"
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "big") | "\(.priority) \(.limit.gpu)"' "$TD/o")" "10 1.5" "... priority 10, limit.gpu 1.5"
tcli queues set big --max-gpu none
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "big") | .max_gpu_milli' "$TD/o")" "null" "queues set --max-gpu none"
tcli queues rm big
is "$RC" 0 "queues rm"
tcli queues rm default
is "$RC" 1 "the default queue cannot be removed"
one_line_error; ok $? "... with one line: $(errtext)"
tcli users add carol
is "$RC" 0 "users add"
CAROL=$(out)
case "$CAROL" in tsl_*) r=0 ;; *) r=1 ;; esac
ok $r "it prints the new user's token"
TESSEL_TOKEN=$CAROL tcli whoami
is "$(out)" "carol (user) at $TD_URL" "the token works"
tcli users
grep -qE '^carol  user  +0  ' "$TD/o"; ok $? "users lists carol"
tcli tokens add --user carol --name laptop
CT2=$(out)
tcli tokens --user carol --json
is "$(jq -r '[.tokens[].name] | join(",")' "$TD/o")" "created by tessel users add,laptop" "tokens --user lists carol's"
ID2=$(jq -r '.tokens[] | select(.name == "laptop") | .id' "$TD/o")
tcli tokens rm "$ID2"
is "$RC" 0 "tokens rm"
TESSEL_TOKEN=$CT2 tcli whoami
is "$RC" 1 "a revoked token is refused"

td_stop; ok $? "tesseld stops cleanly"
done_testing
