#!/bin/sh
# t8000-install-upgrade.t - the Debian packages, installed and upgraded in a throwaway root, keep
# the data and the running jobs (issue 16, "Figures to reach").
# test-timeout: 3600
#
# From a copy of the tree: dpkg-buildpackage builds version N (lintian clean); a Debian 12
# minbase root (debootstrap, cached per day in $TESSEL_TEST_CACHE) gets them with dpkg -i; tesseld
# starts with exactly the unit's ExecStart line.  There is no systemd here (nor in CI): the test
# does what systemd would: tmpfiles.d's directories, a clean environment, and on the upgrade the
# unit's KillMode=process restart that the postinst asks for (deb-systemd-invoke restart): SIGTERM
# to tesseld alone, then the new ExecStart.  Each tesseld runs in a network namespace of its own
# (loopback only; its TCP port is the default one) and is reached over its local socket.
#
# Version N+1 is built too (a changelog entry written in the copy).  A user submits a job (a
# sleep loop that writes a marker when told to end); N+1 is installed over N with dpkg -i; after
# the restart the job is still running under the new tesseld, it ends with exit 0 and tesseld
# records it; users, queues and finished jobs are kept; the new tesseld (the file of version
# N+1) answers.
#
# Everything happens in a private mount namespace: the root's mounts (itself, proc, sys, dev,
# run) never reach the host, and they are unmounted on every exit path.  Takes 3-10 minutes on a
# quiet machine (two package builds, lintian, debootstrap when not cached).  Under the sanitizer
# build it does not apply: it builds its own packages with Debian's flags, whatever build is
# under test.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
[ "${TESSEL_SANITIZE:-0}" = 1 ] &&
    not_applicable "the packages are built by dpkg-buildpackage with Debian's flags, not the sanitizer build"
[ "$(id -u)" = 0 ] || bail "must run as root (chroot, mounts, dpkg in the root)"
for c in dpkg-buildpackage dh lintian debootstrap unshare chroot curl jq ip tar; do
    command -v $c >/dev/null || bail "$c is needed (scripts/install-deps.sh)"
done

# Into a private mount namespace once: mounts made below stay in it.
if [ -z "${T8000_PRIVATE:-}" ]; then
    T8000_PRIVATE=1 exec unshare -m --propagation private sh "$0" "$@"
fi

W=$(mktemp -d /var/tmp/tessel-t8000-XXXXXX) || bail "mktemp"
R="$W/root"
TPID=""
cleanup() {
    [ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null
    # Jobs left running (their shims are in their own sessions).
    for f in "$R"/var/lib/tessel/jobs/*/pid; do
        [ -f "$f" ] || continue
        read -r shim _ job <"$f"
        kill -9 "-$job" "$shim" 2>/dev/null
    done
    mountpoint -q "$R" 2>/dev/null && umount -R -l "$R"
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# ---- version N from a copy of the tree (tracked files and new ones not ignored) -------------
mkdir "$W/src"
(cd "$TESSEL_SRCDIR" && { git ls-files; git ls-files -o --exclude-standard; } |
    tar -cf - -T -) | tar -xf - -C "$W/src" || bail "cannot copy the tree"
VN=$(cd "$W/src" && dpkg-parsechangelog -S Version)
(cd "$W/src" && DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b) >"$W/build-n.log" 2>&1
RC=$?
[ $RC = 0 ] || tail -30 "$W/build-n.log" | sed 's/^/#   /'
is "$RC" 0 "dpkg-buildpackage -us -uc -b builds version $VN"
DEBS_N=""
for p in tessel tesseld libtessel-cuda; do
    DEBS_N="$DEBS_N $(ls "$W/${p}_${VN}_"*.deb 2>/dev/null)"
done
is "$(echo $DEBS_N | wc -w)" 3 "three packages: tessel, tesseld, libtessel-cuda"
lintian --fail-on error,warning "$W/tessel_${VN}_"*.changes >"$W/lintian.log" 2>&1
RC=$?
sed 's/^/#   lintian: /' "$W/lintian.log"
is "$RC" 0 "lintian finds no error and no warning"

# ---- version N+1: a changelog entry in the copy, then the same build ------------------------
# Built before anything runs in the root, so that every long step comes before the mounts and
# the daemons (a test stopped by its time box during a build leaves nothing mounted behind).
VN1="$VN+upgradetest1"
{
    printf 'tessel (%s) unstable; urgency=medium\n\n  * Test upgrade (t8000).\n\n' "$VN1"
    printf ' -- Tessel tests <tests@localhost>  %s\n\n' "$(date -R)"
    cat "$W/src/debian/changelog"
} >"$W/changelog" && mv "$W/changelog" "$W/src/debian/changelog"
# No clean: the tree's build is reused (only the packages' version changes).
(cd "$W/src" && dh_clean && DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b -nc) \
    >"$W/build-n1.log" 2>&1
RC=$?
[ $RC = 0 ] || tail -30 "$W/build-n1.log" | sed 's/^/#   /'
is "$RC" 0 "dpkg-buildpackage builds version $VN1"

# ---- the throwaway root: Debian 12 minbase with the packages' dependencies -----------------
DEPS=$(for d in $DEBS_N; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
    sed -e 's/|.*//' -e 's/(.*)//' -e 's/ //g' | grep -v -x -e '' -e tessel -e tesseld \
    -e libtessel-cuda | sort -u | tr '\n' ',' | sed 's/,$//')
# The mirror this machine's apt uses (deb822 sources, else sources.list).
MIRROR=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v security | head -n 1)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
    /etc/apt/sources.list 2>/dev/null)
CACHE=${TESSEL_TEST_CACHE:-/var/cache/tessel-test}
KEY="bookworm-minbase-$(date -u +%Y%m%d)-$(echo "$DEPS" | md5sum | cut -c1-8).tar.gz"
mkdir -p "$R"
if [ -s "$CACHE/$KEY" ] && tar -xzf "$CACHE/$KEY" -C "$R" 2>"$W/untar.log"; then
    diag "root from the cache $CACHE/$KEY"
    pass=0
else
    rm -rf "$R" && mkdir -p "$R"
    debootstrap --variant=minbase --include="$DEPS" bookworm "$R" "$MIRROR" >"$W/debootstrap.log" 2>&1
    pass=$?
    [ $pass = 0 ] || { tail -20 "$W/debootstrap.log" | sed 's/^/#   /'; bail "debootstrap bookworm failed (mirror: ${MIRROR:-none found})"; }
    mkdir -p "$CACHE" && tar -czf "$CACHE/$KEY.tmp.$$" -C "$R" . && mv "$CACHE/$KEY.tmp.$$" "$CACHE/$KEY"
    # Older days' roots go.
    find "$CACHE" -name 'bookworm-minbase-*.tar.gz' ! -name "$KEY" -delete 2>/dev/null
fi
is "$pass" 0 "a Debian 12 minbase root with $DEPS"
# The root is a mount point, as / is on a real system (tessel-shim makes each job's mounts
# slaves of /, which needs a mount point).
mount --bind "$R" "$R" && mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" &&
    mount --rbind /dev "$R/dev" &&
    mount -t tmpfs -o mode=0755 tmpfs "$R/run" || bail "cannot mount proc, sys, dev, run in the root"
in_root() { chroot "$R" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
in_root useradd -m -s /bin/sh t8000user || bail "useradd in the root"

cp $DEBS_N "$R/tmp/" && in_root sh -c 'dpkg -i /tmp/*.deb' >"$W/dpkg-n.log" 2>&1
RC=$?
[ $RC = 0 ] || sed 's/^/#   /' "$W/dpkg-n.log"
is "$RC" 0 "dpkg -i installs version $VN in the root"
is "$(in_root dpkg-query -W -f '${Version}' tesseld)" "$VN" "tesseld $VN is installed"
UNIT="$R/lib/systemd/system/tesseld.service"
[ -L "$R/etc/systemd/system/multi-user.target.wants/tesseld.service" ]
ok $? "the postinst enabled tesseld.service"

# What systemd-tmpfiles --create would do at boot or in the postinst (no systemd here).
grep '^d ' "$R/usr/lib/tmpfiles.d/tessel.conf" | while read -r _ path mode user group _; do
    mkdir -p "$R$path" && chmod "$mode" "$R$path" && in_root chown "$user:$group" "$path"
done
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
is "$EXEC" "/usr/sbin/tesseld" "the unit's ExecStart"

# Start the unit's command line as systemd would: clean environment, cwd /, its own log.
start_unit() {
    unshare -n sh -c 'ip link set lo up && exec chroot "$1" env -i \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin $2' \
        sh "$R" "$EXEC" >>"$W/tesseld-$1.log" 2>&1 &
    TPID=$!
    i=0
    until [ -S "$R/run/tessel/tesseld.sock" ] && sock GET /healthz >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 "$TPID" 2>/dev/null; then
            sed 's/^/#   /' "$W/tesseld-$1.log"
            bail "tesseld ($1) did not start"
        fi
        sleep 0.1
    done
}
# The API over the local socket as root (tesseld's admin); answer on stdout.
sock() {
    set -- "$1" "$2" "${3:-}" -sf --unix-socket "$R/run/tessel/tesseld.sock" -X "$1"
    [ -n "$3" ] && set -- "$@" -H 'Content-Type: application/json' --data-binary "$3"
    _u="http://localhost$2"
    shift 3
    curl "$@" "$_u"
}
as_user() { chroot --userspec=t8000user:t8000user "$R" env -i HOME=/home/t8000user \
    PATH=/usr/bin:/bin sh -c 'cd "$HOME" && exec "$@"' sh "$@"; }
state() { sock GET "/v1/jobs/$1" | jq -r "$2"; }

start_unit n
is "$(stat -c %a "$R/var/lib/tessel")" 711 "/var/lib/tessel is 0711"
is "$(sock GET /healthz | jq -r .status)" ok "tesseld $VN answers on /run/tessel/tesseld.sock"

# Data the upgrade must keep: a queue, a user (made at the user's first call), a finished job.
sock POST /v1/queues '{"name":"vision"}' >/dev/null
ok $? "the admin adds queue vision"
as_user tessel run -- true >"$W/run-true.log" 2>&1
is "$?" 0 "the user runs a job that ends with exit 0"
DONE=$(sock GET /v1/jobs | jq -r '[.jobs[] | select(.argv == ["true"])][0].id')
is "$(state "$DONE" .state)" succeeded "tesseld recorded it succeeded (job $DONE)"

# The job that lives through the upgrade.
J=$(as_user tessel run -d --shell \
    'echo $$ >started; while [ ! -e go ]; do sleep 1; done; echo finished >marker')
ok "$([ -n "$J" ]; echo $?)" "the user submits a long job (job ${J:-none})"
H="$R/home/t8000user"
i=0
while [ ! -s "$H/started" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
is "$(state "$J" .state)" running "it runs"
JOBPID=$(cat "$H/started")

# ---- the upgrade ------------------------------------------------------------------------------
rm -f "$R"/tmp/*.deb
for p in tessel tesseld libtessel-cuda; do cp "$W/${p}_${VN1}_"*.deb "$R/tmp/"; done
in_root sh -c 'dpkg -i /tmp/*.deb' >"$W/dpkg-n1.log" 2>&1
RC=$?
[ $RC = 0 ] || sed 's/^/#   /' "$W/dpkg-n1.log"
is "$RC" 0 "dpkg -i upgrades to $VN1 (maintainer scripts run)"
is "$(in_root dpkg-query -W -f '${Version}' tesseld)" "$VN1" "tesseld $VN1 is installed"

# The restart the postinst asks systemd for, with the unit's KillMode=process: SIGTERM to
# tesseld alone (SIGKILL after TimeoutStopSec, 90 s by default), then ExecStart again.
grep -q '^KillMode=process$' "$UNIT"
ok $? "the installed unit has KillMode=process"
kill -TERM "$TPID"
i=0
while kill -0 "$TPID" 2>/dev/null && [ $i -lt 900 ]; do i=$((i + 1)); sleep 0.1; done
kill -9 "$TPID" 2>/dev/null
wait "$TPID"
is "$?" 0 "the old tesseld exits 0 on SIGTERM"
kill -0 "$JOBPID" 2>/dev/null
ok $? "the job's process $JOBPID outlives the old tesseld"
start_unit n1
NEW_INODE=$(stat -c %i "$R/usr/sbin/tesseld")
is "$(stat -L -c %i "/proc/$TPID/exe")" "$NEW_INODE" "the running tesseld is the file of $VN1"
is "$(sock GET /healthz | jq -r .status)" ok "and it answers"

is "$(state "$J" .state)" running "the job is still running under the new tesseld"
kill -0 "$JOBPID" 2>/dev/null
ok $? "its process $JOBPID is the same"
touch "$H/go"
i=0
while [ "$(state "$J" .state)" = running ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
is "$(state "$J" '.state + " " + (.exit_code | tostring)')" "succeeded 0" \
    "the job ends with exit 0 and the new tesseld records it"
is "$(cat "$H/marker" 2>/dev/null)" finished "the job wrote its marker at its end"

# The store's data is kept.
sock GET /v1/users | jq -e '.users[] | select(.name == "t8000user")' >/dev/null
ok $? "the user is kept"
sock GET /v1/queues | jq -e '.queues[] | select(.name == "vision")' >/dev/null
ok $? "the queue is kept"
is "$(state "$DONE" '.state + " " + (.exit_code | tostring)')" "succeeded 0" \
    "the job finished before the upgrade is kept"

kill -TERM "$TPID"
wait "$TPID"
is "$?" 0 "the new tesseld stops cleanly"
TPID=""
done_testing
