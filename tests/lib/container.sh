# tests/lib/container.sh - the set-up of the container tests (t7020-t7024, docs/containers.md);
# source after tap.sh, daemon.sh and cli.sh.
#
#   ctr_daemon [TESSELD ARGS]  what they need is there, else the test fails (root, crun, jq,
#                       the probe and the interposer built); tesseld as root with one SIMULATED
#                       GPU (the fake driver and NVML of tests/fake stand for the host's driver),
#                       its CLI set up as the admin's; the test image testimg:1 built into the
#                       image store ($IMG: its rootfs) from this machine's own files
#                       (tests/lib/mkimage.sh, no network) with tcu-probe in it; the account
#                       nobody as a Tessel user ($NB: its token); $W: a directory nobody may use
#                       as its cwd.
#   nbjob JSON          POST /v1/jobs as nobody: the job's id, or "" ($TD/out: the answer)
#   nblogs ID [stderr]  the job's output
#   val KEY LINE        the value of KEY=... in LINE
#   job_cgroup PID CTL  the directory of PID's cgroup that holds controller CTL's files (memory,
#                       freezer: v1's hierarchy of that controller; v2: the unified group)
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
ctr_daemon() {
    [ "$(id -u)" = 0 ] || missing "not root: container jobs need tesseld as root"
    command -v jq >/dev/null || missing "jq is needed"
    command -v curl >/dev/null || missing "curl is needed"
    [ -x /usr/bin/crun ] || missing "crun is needed (scripts/install-deps.sh)"
    for f in "$PROBE" "$TESSEL_BUILD/lib/libtessel-cuda.so" "$TESSEL_BUILD/tests/fake/libcuda.so.1" \
        "$TESSEL_BUILD/bin/tessel"; do
        [ -e "$f" ] || missing "$f not built"
    done
    getent passwd nobody >/dev/null || missing "no 'nobody' account"
    td_setup
    chmod 755 "$TD" # nobody's jobs reach their cwd below it
    td_start --fake-gpus 1xT4:8G "$@"
    cli_setup
    TESSEL_URL="$TD_URL"
    TESSEL_TOKEN="$TD_ADMIN"
    export TESSEL_URL TESSEL_TOKEN
    mkdir -p "$TD/data/images/testimg"
    chmod 700 "$TD/data/images" # root's alone (docs/containers.md)
    chmod 755 "$TD/data/images/testimg"
    IMG="$TD/data/images/testimg/1/rootfs"
    TESSEL_BUILD="$TESSEL_BUILD" sh "$TESSEL_SRCDIR/tests/lib/mkimage.sh" "$IMG" "$PROBE" \
        >"$TD/mkimage.log" 2>&1 || { cat "$TD/mkimage.log"; missing "the test image could not be built"; }
    api POST /v1/users '{"name":"nobody"}'
    api POST /v1/tokens '{"user":"nobody"}'
    NB=$(jget .token)
    [ -n "$NB" ] && [ "$NB" != null ] || missing "no token for nobody"
    W="$TD/work"
    mkdir -p "$W"
    chown nobody "$W"
}
nbjob() {
    api POST /v1/jobs "$1" "$NB"
    _id=$(jget .id)
    [ "$_id" != null ] && echo "$_id"
}
nblogs() {
    api GET "/v1/jobs/$1/logs${2:+?stream=$2}" "" "$NB"
    cat "$TD/out"
}
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
job_cgroup() {
    if [ "$(api GET /v1/nodes; jget '.nodes[0].cgroups')" = v2 ]; then
        echo "/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' "/proc/$1/cgroup")"
    else
        echo "/sys/fs/cgroup/$2$(awk -F: -v c="$2" '$2 == c {print $3}' "/proc/$1/cgroup")"
    fi
}
