#!/bin/sh
# t3025-daemon-logs.t - a job's logs have a size limit (--log-limit, per stream), enforced by
# its supervisor: a job of nobody that prints without end (200 MB on each stream, the data
# directory a 32 MiB file system) keeps its head and tail with a marker where bytes were
# dropped, cannot fill the disk, and submissions go on being accepted.  --log-limit 0 keeps
# everything.  A job that ends while the file system of its exit record (starts/, tesseld's
# own, in the data directory) is full ends "succeeded" at once: its supervisor writes the record
# into its start lock, in bytes the file already has (since 2026-11-28; before, into a new
# file, which waited for space), never "supervisor lost".  A job whose end
# the store refuses (here: locked by another process for 12 s) is logged "cannot record its
# end" once, not at every tick, and recorded once the store takes writes again.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || bail "curl and jq are needed"
command -v sqlite3 >/dev/null || bail "sqlite3 is needed"
[ "$(id -u)" = 0 ] || bail "must run as root (tesseld switches users, tmpfs is mounted)"
getent passwd nobody >/dev/null || bail "no 'nobody' account"
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)

td_setup
chmod 755 "$TD"
mkdir -p "$TD/data"
mount -t tmpfs -o size=32m,mode=0700 tmpfs "$TD/data" || bail "cannot mount tmpfs"
trap 'td_cleanup_fs' EXIT
td_cleanup_fs() {
    for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done
    [ -n "${LOCKER:-}" ] && kill "$LOCKER" 2>/dev/null
    sleep 0.2
    umount -l "$TD/data/starts" 2>/dev/null
    umount -l "$TD/data" 2>/dev/null
    td_cleanup
}
td_start --fake-gpus 1xT4:16G --no-cgroups --disk-reserve 1M --log-limit 1M || bail "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)

# --- 200 MB on each stream into a 32 MiB file system ------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","yes | head -c 200000000; echo LAST-OUT; yes e | head -c 200000000 >&2; echo LAST-ERR >&2"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = succeeded ]'
ok $? "the job printing 400 MB succeeds"
JD="$TD/data/jobs/$J"
M1="[tessel: $((200000009 - 1048576)) bytes dropped here: log limit 1 MiB]"
is "$(stat -c %s "$JD/stdout")" "$((1048576 + ${#M1} + 1))" "stdout holds 1 MiB of output and the marker line"
is "$(grep -c '^\[tessel: ' "$JD/stdout")" 1 "one marker line in stdout"
grep -qxF "$M1" "$JD/stdout"; ok $? "which says: $M1"
is "$(head -c 4 "$JD/stdout" | od -An -c | tr -s ' ')" " y \n y \n" "the head is the job's first output"
is "$(tail -n 1 "$JD/stdout")" "LAST-OUT" "the tail ends with the job's last line"
M2="[tessel: $((200000009 - 1048576)) bytes dropped here: log limit 1 MiB]"
grep -qxF "$M2" "$JD/stderr"; ok $? "stderr has its own limit and marker"
is "$(tail -n 1 "$JD/stderr")" "LAST-ERR" "and its tail"
is "$(stat -c '%U %a' "$JD/stdout") $(stat -c '%U %a' "$JD/stderr")" "nobody 600 nobody 600" \
    "the logs are nobody's, 0600"
curl -s -H "Authorization: Bearer $NB" "$TD_URL/v1/jobs/$J/logs" >"$TD/api-out"
cmp -s "$TD/api-out" "$JD/stdout"; ok $? "the API serves the same log"
USED=$(df -k --output=used "$TD/data" | tail -1)
ok "$([ "$USED" -lt 16384 ]; echo $?)" "the data file system holds $USED KiB (under 16 MiB)"
api POST /v1/jobs '{"argv":["true"]}' "$NB"
is "$CODE" 201 "submissions are still accepted"
K=$(jget .id)
wait_for '[ "$(job_state '"$K"')" = succeeded ]'; ok $? "and run"
td_stop; ok $? "tesseld stops cleanly"

# --- --log-limit 0: no limit -----------------------------------------------------------
td_start --fake-gpus 1xT4:16G --no-cgroups --disk-reserve 1M --log-limit 0 || bail "tesseld did not restart"
api POST /v1/jobs '{"argv":["sh","-c","yes | head -c 3000000"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = succeeded ]'
is "$(stat -c %s "$TD/data/jobs/$J/stdout")" 3000000 "--log-limit 0 keeps all 3,000,000 bytes"
td_stop
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/x" --log-limit 12Q >"$TD/bad.log" 2>&1
RC=$?
ok "$([ $RC = 2 ] && grep -q '^tesseld: --log-limit 12Q: ' "$TD/bad.log"; echo $?)" \
    "a bad --log-limit is refused with one line (exit $RC)"

# --- the exit record's file system is full when the job ends -----------------------------
mkdir -p "$TD/data/starts"
mount -t tmpfs -o size=4m,mode=0700 tmpfs "$TD/data/starts" || bail "cannot mount tmpfs on starts/"
td_start --fake-gpus 1xT4:16G --no-cgroups --disk-reserve 1M || bail "tesseld did not restart"
api POST /v1/jobs '{"argv":["sh","-c","touch ready; while [ ! -e go ]; do sleep 0.1; done; echo bye"]}' "$NB"
J=$(jget .id)
JD="$TD/data/jobs/$J"
wait_for '[ -e "'"$JD"'/ready" ]'
dd if=/dev/zero of="$TD/data/starts/filler" bs=64k 2>/dev/null
# What 64 KiB blocks left: the file system is full to the last block.
dd if=/dev/zero of="$TD/data/starts/filler2" bs=512 2>/dev/null
diag "starts/ file system: $(df -k "$TD/data/starts" | tail -1)"
(printf x >"$TD/data/starts/probe") 2>/dev/null
ok "$([ $? != 0 ]; echo $?)" "starts/ is full: a new file there gets not one byte"
touch "$JD/go"
read -r SHIM _ JOBPID <"$JD/pid"
wait_for '! kill -0 '"$JOBPID"' 2>/dev/null'
ok $? "the job has ended"
wait_for '[ "$(job_state '"$J"')" = succeeded ]'
ok $? "its end is recorded at once, starts/ full when it ended"
[ "$(job_state "$J")" = succeeded ] ||
    diag "shim $SHIM: $(kill -0 "$SHIM" 2>&1 && echo alive); $(df -k "$TD/data/starts" | tail -1); shim.log: $(cat "$JD/shim.log" 2>&1 | tail -5)"
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state) $(jget .exit_code) $(jget .reason)" "succeeded 0 exited with status 0" \
    "succeeded, with its exit status, as its supervisor saw it"
rm -f "$TD/data/starts/filler" "$TD/data/starts/filler2" "$TD/data/starts/probe"
td_stop; ok $? "tesseld stops cleanly"

# --- the store refuses the end for a while ----------------------------------------------
td_start --fake-gpus 1xT4:16G --no-cgroups --disk-reserve 1M || bail "tesseld did not restart"
api POST /v1/jobs '{"argv":["sh","-c","touch ready; while [ ! -e go ]; do sleep 0.1; done"]}' "$NB"
J=$(jget .id)
JD="$TD/data/jobs/$J"
wait_for '[ -e "'"$JD"'/ready" ] && [ "$(job_state '"$J"')" = running ]'
mkfifo "$TD/sql"
sqlite3 "$TD/data/tessel.db" <"$TD/sql" >"$TD/sql.out" 2>&1 &
LOCKER=$!
exec 8>"$TD/sql"
echo ".timeout 10000" >&8
echo "BEGIN IMMEDIATE; UPDATE jobs SET reason = reason WHERE id = $J; SELECT 'locked';" >&8
wait_for 'grep -q locked "'"$TD/sql.out"'"'
ok $? "another process holds the store's write lock"
touch "$JD/go"
wait_for '[ -n "$(start_record '"$J"' exit)" ]'
# The lock is held until tesseld has said it cannot record the end, then through more than one
# further try (each waits the store's 5 s busy timeout): not a fixed time, which a loaded machine
# can use up before tesseld's first try.
wait_for 'grep -q "job '"$J"': cannot record its end" "'"$TD"'/tesseld.log"'
ok $? "tesseld says it cannot record the job's end while the store is locked"
sleep 11
echo "COMMIT;" >&8
exec 8>&-
wait "$LOCKER"
LOCKER=
wait_for '[ "$(job_state '"$J"')" = succeeded ]'
ok $? "once the store takes writes again, the job's end is recorded"
is "$(grep -c "job $J: cannot record its end" "$TD/tesseld.log")" 1 \
    "'cannot record its end' was logged once over 11 s more of refusals"
is "$(grep -c "job $J: its end is recorded now" "$TD/tesseld.log")" 1 "and its recording once"
td_stop; ok $? "tesseld stops cleanly"
done_testing
