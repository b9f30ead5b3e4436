#!/bin/sh
# t3163-daemon-jobdir-mounted.t - a job's directory (jobs/ID) is its user's, who may mount a file
# system of their own over it where FUSE is installed (fusermount3 is set-uid root; the user
# owns the directory).  Here the test, as root, mounts over a running job's directory a FUSE
# file system whose server never answers (a /dev/fuse descriptor nobody reads; allow_other), as
# the job's user could, after the job has a slice file and tesseld knows its pid.  Meanwhile,
# each answered within 5 s ("did not hang"; tesseld reads nothing there through the mount):
#   - GET /v1/gpus and /metrics (which read the job's slice file), GET /v1/jobs and the job;
#   - a suspend of the job: refused at once, 409, the reason naming the mount;
#   - the job's logs (read without the lock, through no mount either);
#   - an admin's submission, which is started and succeeds (the tick goes on);
#   - a cancel of the job, which ends cancelled (its exit record is in tesseld's own starts/).
# And the GPU-memory watchdog still kills a job that goes over its slice with such a mount over
# its directory (it writes its line into the job's stderr just before the kill: not through the
# mount): nobody's job, the mount made first, then 3000 MiB outside the interposer on a 1 GiB
# slice (tcu-raw), ends failed with the watchdog's reason.
# Before 2026-11-27 tesseld opened the slice file (and pid, exit) by name under its lock: the
# first /v1/gpus waited for the FUSE server, and every request of every user with it; and the
# watchdog's open of stderr waited too, so the job kept its 3000 MiB.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "must run as root (the job's account is nobody; the test mounts FUSE)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"
[ -c /dev/fuse ] || missing "/dev/fuse is needed (the fuse module)"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
RAW=$TESSEL_BUILD/tests/interposer/tcu-raw
[ -x "$RAW" ] || missing "tcu-raw not built"
LIBCUDA=$(realpath "$TESSEL_BUILD/tests/fake/libcuda.so.1") || missing "the fake libcuda not built"

td_setup
chmod 755 "$TD"
MNT=""
# Unmount before td_cleanup reads jobs/*/pid: a read through the stalled mount waits for ever.
unstall() {
    exec 3>&- # the connection aborts: whatever waits on it fails
    [ -n "$MNT" ] && umount -l "$MNT" 2>/dev/null
    return 0
}
trap 'unstall; td_cleanup' EXIT
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
# answered CODE-FILE METHOD PATH [TOKEN]: curl with a 5 s bound; prints the status (000: none)
answered() {
    curl -s -m 5 -o "$TD/$1" -w '%{http_code}' -X "$2" -H "Authorization: Bearer ${4-$TD_ADMIN}" \
        "$TD_URL$3"
}

api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5}' "$NB"
is "$CODE" 201 "nobody's job with half a GPU is accepted"
J=$(jget .id)
JD="$TD/data/jobs/$J"
spawned() {
    api GET "/v1/jobs/$J/events" "" "$NB"
    [ "$(jq '[.events[] | select(.event == "spawned" and .detail.job_pid != null)] | length' \
        "$TD/out")" -ge 1 ]
}
wait_for spawned
ok $? "it runs, and tesseld knows its pid"
api POST "/v1/jobs/$J/suspend" "" "$NB"
is "$CODE" 200 "a suspend before the mount takes effect (tesseld makes its slice file)"
api POST "/v1/jobs/$J/resume" "" "$NB"
is "$CODE" 200 "and a resume"

exec 3<>/dev/fuse || missing "cannot open /dev/fuse"
MNT="$JD"
mount -i -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0,allow_other tessel-t3163 "$MNT" ||
    missing "cannot mount a FUSE file system"
ok 0 "a FUSE file system whose server never answers is mounted over jobs/$J"

is "$(answered gpus GET /v1/gpus)" 200 "GET /v1/gpus answers within 5 s"
is "$(curl -s -m 5 -o "$TD/metrics" -w '%{http_code}' "$TD_URL/metrics")" 200 \
    "GET /metrics answers within 5 s"
is "$(answered job GET "/v1/jobs/$J" "$NB")" 200 "GET /v1/jobs/$J answers within 5 s"
is "$(jq -r .state "$TD/job")" running "the job is running"
is "$(answered list GET /v1/jobs)" 200 "GET /v1/jobs answers within 5 s"
is "$(answered susp POST "/v1/jobs/$J/suspend" "$NB")" 409 "a suspend is refused within 5 s, 409"
case "$(jq -r .error.message "$TD/susp")" in
*"a file system is mounted on the job's directory"*) ok 0 "... naming the mount" ;;
*) ok 1 "... naming the mount: $(jq -r .error.message "$TD/susp")" ;;
esac
code=$(answered logs GET "/v1/jobs/$J/logs" "$NB")
ok "$([ "$code" != 000 ]; echo $?)" "the job's logs are answered within 5 s ($code)"
code=$(curl -s -m 5 -o "$TD/adm" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
    -H 'Content-Type: application/json' --data-binary '{"argv":["true"],"cwd":"/"}' \
    "$TD_URL/v1/jobs")
is "$code" 201 "an admin's submission is answered within 5 s"
ADM=$(jq -r .id "$TD/adm")
wait_for "[ \"\$(job_state $ADM)\" = succeeded ]"
ok $? "it runs and succeeds meanwhile"
is "$(answered cancel POST "/v1/jobs/$J/cancel" "$NB")" 200 "a cancel of the job is answered within 5 s"
wait_for "[ \"\$(job_state $J)\" = cancelled ]"
ok $? "the job ends cancelled, its end recorded with the mount still there"
kill -0 "$TD_PID"
ok $? "tesseld is up"
unstall
MNT=""
ok 0 "the FUSE file system is unmounted"

# ---- the watchdog's kill with a mount over the job's directory ------------------------------
mkdir -m 1777 "$TD/nb"
: >"$TD/nb/fake-state" && chmod 666 "$TD/nb/fake-state" # nobody's processes and the root shim share it
BODY="{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $TD/nb/go ]; do sleep 0.1; done; exec $RAW $LIBCUDA 3000 $TD/nb/never\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",\"env\":{\"TESSEL_FAKE_CTX_MEM\":\"64M\",\"TESSEL_FAKE_STATE\":\"$TD/nb/fake-state\"}}"
api POST /v1/jobs "$BODY" "$NB"
W=$(jget .id)
wait_for "[ -s \"$TD/data/jobs/$W/pid\" ] && [ \"\$(job_state $W $NB)\" = running ]"
ok $? "nobody's job $W with a 1 GiB slice runs"
exec 3<>/dev/fuse || missing "cannot open /dev/fuse"
MNT="$TD/data/jobs/$W"
mount -i -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0,allow_other tessel-t3163 "$MNT" ||
    missing "cannot mount a FUSE file system"
ok 0 "a FUSE file system whose server never answers is mounted over jobs/$W"
touch "$TD/nb/go"
wait_for "[ \"\$(job_state $W $NB)\" = failed ]"
ok $? "the job, holding 3000 MiB, is killed by the watchdog: failed"
api GET "/v1/jobs/$W" "" "$NB"
is "$(jget .reason)" \
    "GPU 0: the job's processes hold 3.0 GiB, its slice allows 1.0 GiB: killed by the GPU-memory watchdog" \
    "with the watchdog's reason"
unstall
MNT=""
td_stop
ok $? "tesseld stops cleanly"
done_testing
