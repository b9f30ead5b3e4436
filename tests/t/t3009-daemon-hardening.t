#!/bin/sh
# t3009-daemon-hardening.t - with tesseld running as root, a job of a system user (nobody):
# gets only descriptors 0-2 (even when tesseld itself inherited another one), the account's
# supplementary groups, no uid/gid/capability of root left, default signal dispositions and
# an empty mask, its own process group outside tesseld's session, a 0700 directory and 0600
# logs.  What the job puts in its directory (which is its own) cannot make root tesseld read
# another file through a symlink, block on a FIFO, take a forged "exit" record for the job's
# end, or signal a process group named in a forged "pid" file.  A second tesseld on the same
# data directory is refused with a clear error, and so is a data directory (or jobs/) owned or
# writable by another user.  SIGHUP reloads the configuration (tesseld runs on, t3101);
# SIGTERM stops tesseld, its jobs running on.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot switch users"
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)
NOBODY_GID=$(getent passwd nobody | cut -d: -f4)
[ -n "$NOBODY_UID" ] || missing "no 'nobody' account"
command -v mkfifo >/dev/null || missing "mkfifo is needed"

td_setup
chmod 755 "$TD"
# tesseld inherits a descriptor without close-on-exec (as from a careless wrapper): it must
# not reach the job.
exec 9>"$TD/leaked"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
exec 9>&-
is "$(stat -c %a "$TD/data/admin.token")" 600 "admin.token is 0600"

# --- a second tesseld on the same data directory -------------------------------------------
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data" --listen 127.0.0.1:0 --fake-gpus 1xT4:16G \
    --no-cgroups >"$TD/second.log" 2>&1
RC=$?
ok "$([ $RC -ne 0 ]; echo $?)" "a second tesseld on the same data dir exits non-zero ($RC)"
grep -q "another tesseld (pid $TD_PID) uses this data directory" "$TD/second.log"
ok $? "and says why"

# A data directory someone else owns or may write is refused.
mkdir -p "$TD/other"
chown nobody "$TD/other"
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/other" --listen 127.0.0.1:0 --no-cgroups \
    >"$TD/other.log" 2>&1
RC=$?
ok "$([ $RC -ne 0 ] && grep -q "must be a directory owned by tesseld's user" "$TD/other.log"; echo $?)" \
    "a data directory owned by another user is refused ($RC)"
mkdir -p "$TD/gw/jobs"
chmod 777 "$TD/gw/jobs"
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/gw" --listen 127.0.0.1:0 --no-cgroups >"$TD/gw.log" 2>&1
RC=$?
ok "$([ $RC -ne 0 ] && grep -q "writable by no one else" "$TD/gw.log"; echo $?)" \
    "a jobs/ directory others may write is refused ($RC)"

api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)

# --- the job's process: descriptors, ids, groups, capabilities, signals, session -----------
api POST /v1/jobs '{"argv":["sleep","60"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state $J)" = running ] && [ -s "$TD/data/jobs/$J/pid" ]'
read -r _ _ JP <"$TD/data/jobs/$J/pid"
wait_for '[ "$(readlink /proc/'"$JP"'/exe)" = "$(readlink -f "$(command -v sleep)")" ]'
is "$(ls /proc/$JP/fd | sort -n | tr '\n' ' ')" "0 1 2 " "the job has descriptors 0, 1, 2 only"
st() { sed -n "s/^$1:[[:space:]]*//p" /proc/$JP/status | tr -s ' \t' ' ' | sed 's/ $//'; }
is "$(st Uid)" "$NOBODY_UID $NOBODY_UID $NOBODY_UID $NOBODY_UID" "real/effective/saved/fs uid are nobody's"
is "$(st Gid)" "$NOBODY_GID $NOBODY_GID $NOBODY_GID $NOBODY_GID" "real/effective/saved/fs gid are nobody's"
is "$(st Groups | tr ' ' '\n' | sort -n | tr '\n' ' ')" \
    "$(id -G nobody | tr ' ' '\n' | sort -n | tr '\n' ' ')" "supplementary groups are the account's (initgroups)"
is "$(st CapPrm) $(st CapEff) $(st CapAmb)" "0000000000000000 0000000000000000 0000000000000000" \
    "no capability left"
is "$(st SigBlk) $(st SigIgn)" "0000000000000000 0000000000000000" \
    "no signal blocked or ignored"
# /proc/PID/stat: fields after the command name: state ppid pgrp session
set -- $(sed 's/.*) //' /proc/$JP/stat)
is "$3" "$JP" "the job leads its own process group"
set -- $(sed 's/.*) //' /proc/$TD_PID/stat)
TSID=$4
set -- $(sed 's/.*) //' /proc/$JP/stat)
ok "$([ "$4" != "$TSID" ]; echo $?)" "outside tesseld's session"
is "$(stat -c '%a %u' "$TD/data/jobs/$J") $(stat -c '%a %u' "$TD/data/jobs/$J/stdout")" \
    "700 $NOBODY_UID 600 $NOBODY_UID" "job directory 0700, logs 0600, both nobody's"
api POST "/v1/jobs/$J/cancel" "" "$NB"

# --- a symlink and a FIFO in place of the logs ---------------------------------------------
echo TOPSECRET >"$TD/secret"
chmod 600 "$TD/secret"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"rm -f stdout stderr; ln -s $TD/secret stdout; mkfifo stderr; touch ready; sleep 60\"]}" "$NB"
K=$(jget .id)
wait_for '[ -e "$TD/data/jobs/$K/ready" ]'
curl -s --max-time 10 -H "Authorization: Bearer $NB" "$TD_URL/v1/jobs/$K/logs" >"$TD/o1"
grep -q TOPSECRET "$TD/o1"
ok "$([ $? -ne 0 ]; echo $?)" "a symlink named stdout is not followed by tesseld (root's file not served)"
curl -s --max-time 10 -H "Authorization: Bearer $NB" "$TD_URL/v1/jobs/$K/logs?stream=stderr" >/dev/null
RC=$?
ok "$([ $RC -ne 28 ]; echo $?)" "a FIFO named stderr does not block the log request (curl rc $RC)"
api GET /healthz "" ""
is "$CODE" 200 "tesseld still answers"
api POST "/v1/jobs/$K/cancel" "" "$NB"

# --- forged exit and pid records -----------------------------------------------------------
setsid sleep 120 &
VICTIM=$!
wait_for '[ "$(cut -d" " -f5 /proc/'"$VICTIM"'/stat 2>/dev/null)" = '"$VICTIM"' ]'
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo \\\"\$PPID 0 $VICTIM\\\" >pid.x; mv -f pid.x pid; echo 'exit 0' >exit.x; mv -f exit.x exit; touch forged; sleep 3; exit 3\"]}" "$NB"
F=$(jget .id)
wait_for '[ -e "$TD/data/jobs/$F/forged" ]'
sleep 0.5
is "$(job_state $F)" running "a forged exit record does not end the job while it runs"
api POST "/v1/jobs/$F/cancel" "" "$NB"
wait_for '[ "$(job_state $F)" = cancelled ]'
api GET "/v1/jobs/$F" "" "$NB"
R=$(jget .reason)
case "$R" in "cancelled by nobody (exited with status 3)" | "cancelled by nobody (killed by signal 15)") ok 0 "its real end is recorded: $R" ;; *) ok 1 "its real end is recorded: $R" ;; esac
kill -0 "$VICTIM" 2>/dev/null
ok $? "the process group named by a forged pid file was not signalled"
kill "$VICTIM" 2>/dev/null

wait_for '[ "$(job_state $J)" = cancelled ] && [ "$(job_state $K)" != running ]'
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"

# --- SIGHUP reloads the configuration, tesseld runs on; SIGTERM stops it, jobs keep running --
td_start --fake-gpus 1xT4:16G --no-cgroups || { ok 1 "tesseld restarts"; done_testing; exit 1; }
api POST /v1/jobs '{"argv":["sleep","60"]}'
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ] && [ -s "$TD/data/jobs/$H/pid" ]'
read -r _ _ HP <"$TD/data/jobs/$H/pid"
kill -HUP "$TD_PID"
wait_for 'grep -q "reloaded " "$TD/tesseld.log"' && kill -0 "$TD_PID"
ok $? "SIGHUP reloads the configuration and tesseld runs on"
kill -TERM "$TD_PID"
wait "$TD_PID"
is "$?" 0 "SIGTERM stops tesseld with exit status 0"
kill -0 "$HP" 2>/dev/null
ok $? "its running job keeps running"
td_start --fake-gpus 1xT4:16G --no-cgroups
is "$(job_state $H)" running "and is running again for the next tesseld"
api POST "/v1/jobs/$H/cancel"
wait_for '[ "$(job_state $H)" = cancelled ]'
td_stop; ok $? "tesseld stops cleanly"
done_testing
