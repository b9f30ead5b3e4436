# tests/slurm/cluster.sh - a Slurm 22.05 cluster of one controller and two nodes for the tests
# and benchmarks of spank_tessel.so (tests/t/t90*-slurm-*.t, bench/slurm).  Source it, then:
#
#   tsc_start [PLUGIN]   munged, slurmctld in its own network namespace (host "ctl"), slurmd
#                        "n1" and "n2" each in its own network, UTS and mount namespace, on a
#                        bridge in a namespace of its own (RECIPES.md sections 1, 3 and 6).  Each
#                        node has two SIMULATED GPUs (the fake NVML/driver of tests/fake,
#                        TESSEL_FAKE_GPUS) with TSC_SHARDS (4) shards per GPU; with PLUGIN ("" = none) the
#                        plugin is named in plugstack.conf.  Returns 1 with the reason in
#                        $TSC_WHY when something does not start.
#                        With TSC_EXTRA_CONF set, its lines are added to slurm.conf.
#                        With TSC_DBD=1, Slurm's accounting too (RECIPES.md has no recipe for
#                        it; this is the one t9012 uses): a MariaDB server (mariadbd, its own
#                        data directory under $TSC, TCP 127.0.0.1:26819 in the controller's
#                        namespace only) and slurmdbd (port 26820) in the controller's
#                        namespaces, the cluster "tessel" and the account "lab" in it (root's
#                        association), and slurm.conf with accounting_storage/slurmdbd,
#                        AccountingStorageEnforce=associations,limits,qos (a job needs an
#                        association: tsc_dbd_user), priority/multifactor with fair share, and
#                        jobacct_gather/linux.
#   tsc_dbd_user USER [QOS]  (TSC_DBD=1) USER's association in account lab, with QOS (a
#                        comma-separated list, "normal" when absent) as the QOS it may use.
#                        With TSC_JOB_SUBMIT set (a job_submit.lua), slurmctld runs it
#                        (JobSubmitPlugins=lua) with TSC_GPUS_LUA (text) as its tessel_gpus.lua.
#   tsc_stop             cancel every job, wait for them, stop the daemons, remove the
#                        namespaces and $TSC (call from an EXIT trap).
#   tsc CMD...           run a Slurm client (sbatch, srun, squeue, scancel, ...) in the
#                        controller's namespace, bounded by a timeout (a client of a dead
#                        controller would hang for minutes).
#   tsc_on NODE CMD...   run CMD in NODE's namespaces (its /run/tessel/slurm, /dev/shm).
#   tsc_wait_state JOB STATE...  poll squeue/scontrol (bounded, 120 s) until the job is in one
#                        of the states; 1 when it is not.
#   tsc_wait_reason JOB REASON   the same for the pending reason (squeue %r, bounded, 60 s).
#   tsc_test_pieces [FILE...]    for the tests: fail (tests/lib/tap.sh `missing`) unless run as
#                        root and the build has its pieces; sets PB (the build whose programs
#                        slurmd and the jobs load: under ASan, the plain sub-build, as slurmd
#                        and the jobs' programs carry no sanitizer runtime; src/slurm/module.mk),
#                        PLUGIN, PRE (the interposer) and FAKE (the fake driver and NVML).
#                        Each FILE must exist too (relative: under PB).
#   tsc_test_setup ACCOUNT...    for the tests, after tsc_test_pieces: fail unless curl, jq and
#                        su are there and each ACCOUNT can be made (tests/lib/local.sh), make
#                        $TD (td_setup) reachable by every account, and set the EXIT trap
#                        (td_cleanup, tsc_stop).
#   tsc_start_sim        for the tests: tsc_start with spank_tessel.so and two SIMULATED GPUs
#                        of 8 GiB per node (the fake driver and NVML: TESSEL_FAKE_GPUS,
#                        LD_LIBRARY_PATH exported), each node's fake-driver state file writable
#                        by every user (as /dev/nvidia* are); fails the test when it does not
#                        start.
#   tsc_tesseld [ARG...] for the tests: start (or start again) tesseld --slurm of $TESSEL_BUILD
#                        in the controller's network namespace, on $TD/data, its local socket
#                        $TD_SOCK (a file every account reaches) and 127.0.0.1:0, with ARGs
#                        added; sets TD_PID and CLIENV (the CLI's environment: that socket, no
#                        config, and the fake driver's variables after tsc_start_sim).  Fails
#                        the test when it does not start.
#   tsc_cli ACCOUNT ARG...       the tessel CLI as ACCOUNT with CLIENV.
#   tsc_exporter NODE    start tessel-node-exporter in NODE's namespaces (as an admin runs it
#                        next to slurmd); its pid in EXP_<NODE>; tsc_stop stops it.
#
# Per node, private mounts (tmpfs) hide /run/tessel/slurm (the plugin's state), /dev/shm (the
# interposer's per-GPU registry) and $TSC/node (the fake driver's shared state), so that two
# nodes on one host keep apart what would be apart on two hosts.
# Every address is inside the namespaces this file creates: no traffic leaves them.

TSC_SHARDS=${TSC_SHARDS:-4}
TSC_WHY=
TSC=
tsc_ns=tsc$$

tsc() { timeout 60 nsenter --net=/run/netns/$tsc_ns-ctl "$@"; }

tsc_test_pieces() {
    [ "$(id -u)" = 0 ] || missing "root (slurmd, network namespaces)"
    PB=$TESSEL_BUILD
    [ "${TESSEL_SANITIZE:-0}" = 1 ] && PB=$TESSEL_BUILD/plain
    PLUGIN=$TESSEL_BUILD/slurm/spank_tessel.so
    PRE=$PB/lib/libtessel-cuda.so
    FAKE=$PB/tests/fake
    for _f in "$PLUGIN" "$PRE" "$FAKE/libcuda.so.1" "$FAKE/libnvidia-ml.so.1" "$@"; do
        case "$_f" in /*) ;; *) _f=$PB/$_f ;; esac
        [ -e "$_f" ] || missing "$_f is not built"
    done
}

tsc_test_setup() {
    for _c in curl jq su; do
        command -v $_c >/dev/null || missing "$_c"
    done
    for _u in "$@"; do
        local_account "$_u" || missing "useradd for the account $_u"
    done
    td_setup
    chmod 755 "$TD"
    trap 'td_cleanup; tsc_stop' EXIT
}

tsc_start_sim() {
    export TESSEL_FAKE_GPUS=2xFakeGPU:8G TESSEL_FAKE_CTX_MEM=0
    export LD_LIBRARY_PATH=$FAKE
    TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1 nvml_timeout=5"
    tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
    diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), $TSC_SHARDS shards each"
    for _n in n1 n2; do
        tsc_on "$_n" sh -c ': >>"$TESSEL_FAKE_STATE" && chmod 666 "$TESSEL_FAKE_STATE"' ||
            missing "the fake driver's state file on $_n"
    done
}

tsc_tesseld() {
    TD_SOCK=$TD/tesseld.sock
    rm -f "$TD/data/tesseld.addr"
    mkdir -p "$TD/data"
    nsenter --net=/run/netns/$tsc_ns-ctl "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data" \
        --listen 127.0.0.1:0 --socket "$TD_SOCK" --no-cgroups --slurm \
        --slurm-conf "$TSC/etc/slurm.conf" --slurm-timeout 15 \
        --slurm-submit "${TSC_SLURM_SUBMIT:-auto}" "$@" >>"$TD/tesseld.log" 2>&1 &
    TD_PID=$!
    TD_PIDS="$TD_PIDS $TD_PID"
    wait_for "[ -s '$TD/data/tesseld.addr' ] || ! kill -0 $TD_PID 2>/dev/null"
    [ -s "$TD/data/tesseld.addr" ] || {
        sed 's/^/#   /' "$TD/tesseld.log"
        missing "tesseld --slurm did not start"
    }
    CLIENV="TESSEL_URL=unix:$TD_SOCK XDG_RUNTIME_DIR=/nonexistent HOME=/nonexistent \
TESSEL_CONFIG=/nonexistent/c"
    [ -n "${TESSEL_FAKE_GPUS:-}" ] && CLIENV="$CLIENV LD_LIBRARY_PATH=$FAKE TESSEL_FAKE_CTX_MEM=0 \
TESSEL_FAKE_STATE=$TSC/node/fake-state"
    return 0
}

tsc_cli() {
    _u=$1
    shift
    as "$_u" "$CLIENV $TESSEL_BUILD/bin/tessel $*"
}

TSC_EXP_PIDS=
tsc_exporter() {
    # nsenter execs the exporter: $! is the exporter's pid (not that of a subshell).
    nsenter --target "$(cat "$TSC/slurmd-$1.pid")" --net --uts --mount \
        "$TESSEL_BUILD/bin/tessel-node-exporter" --nvml "$FAKE/libnvidia-ml.so.1" \
        >>"$TD/exporter-$1.log" 2>&1 &
    eval "EXP_$1=\$!"
    TSC_EXP_PIDS="$TSC_EXP_PIDS $!"
}

tsc_on() {
    _n=$1
    shift
    _p=$(cat "$TSC/slurmd-$_n.pid" 2>/dev/null) || return 1
    nsenter --target "$_p" --net --uts --mount "$@"
}

tsc_fail() {
    TSC_WHY=$1
    return 1
}

tsc_start() {
    _plugin=$1
    for _c in slurmctld slurmd sbatch srun squeue scancel scontrol munged mungekey nsenter \
              unshare ip; do
        command -v $_c >/dev/null || tsc_fail "$_c is not installed (scripts/install-deps.sh)" ||
            return 1
    done
    TSC=$(mktemp -d /tmp/tessel-slurm.XXXXXX) || return 1
    chmod 755 "$TSC"
    # Each node's SIMULATED GPUs share their state through a file of the node's own $TSC/node.
    export TESSEL_FAKE_STATE=$TSC/node/fake-state
    mkdir -p "$TSC/munge" "$TSC/etc" "$TSC/state" "$TSC/spool/n1" "$TSC/spool/n2" "$TSC/log" \
             "$TSC/dev" \
             "$TSC/node" "$TSC/out"
    chmod 1777 "$TSC/out"
    mknod "$TSC/dev/nvidia0" c 1 3 && mknod "$TSC/dev/nvidia1" c 1 3 ||
        tsc_fail "mknod of the fake GPU device files" || return 1
    mkdir -p /run/tessel/slurm
    chown munge:munge "$TSC/munge"
    mungekey -c -k "$TSC/munge/munge.key" >/dev/null 2>&1 && chown munge:munge "$TSC/munge/munge.key"
    su -s /bin/sh munge -c "/usr/sbin/munged --socket=$TSC/munge/munge.sock \
        --key-file=$TSC/munge/munge.key --pid-file=$TSC/munge/munged.pid \
        --seed-file=$TSC/munge/munge.seed --log-file=$TSC/munge/munged.log" ||
        tsc_fail "munged did not start" || return 1
    # The network: a bridge in a namespace of its own, one veth per host.
    ip netns add $tsc_ns-sw && ip -n $tsc_ns-sw link add br0 type bridge &&
        ip -n $tsc_ns-sw link set br0 up || tsc_fail "network namespaces" || return 1
    _i=10
    for _h in ctl n1 n2; do
        _i=$((_i + 1))
        ip netns add $tsc_ns-$_h &&
            ip -n $tsc_ns-$_h link add eth0 type veth peer name p$_h netns $tsc_ns-sw &&
            ip -n $tsc_ns-sw link set p$_h master br0 && ip -n $tsc_ns-sw link set p$_h up &&
            ip -n $tsc_ns-$_h addr add 10.250.0.$_i/24 dev eth0 &&
            ip -n $tsc_ns-$_h link set eth0 up && ip -n $tsc_ns-$_h link set lo up ||
            tsc_fail "network namespace $_h" || return 1
    done
    cat >"$TSC/etc/slurm.conf" <<CONF
ClusterName=tessel
SlurmctldHost=ctl(10.250.0.11)
SlurmctldPort=26817
SlurmdPort=26818
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$TSC/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$TSC/state
SlurmdSpoolDir=$TSC/spool/%n
SlurmctldPidFile=$TSC/slurmctld.pid
SlurmdPidFile=$TSC/slurmd-%n.pid
SlurmctldLogFile=$TSC/log/slurmctld.log
SlurmdLogFile=$TSC/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
$(tsc_acct_conf)
MailProg=/bin/true
SchedulerParameters=sched_interval=1
PlugStackConfig=$TSC/etc/plugstack.conf
GresTypes=gpu,shard
NodeName=n1 NodeAddr=10.250.0.12 NodeHostname=n1 CPUs=${TSC_CPUS:-8} RealMemory=2000 Gres=gpu:2,shard:$((2 * TSC_SHARDS)) State=UNKNOWN
NodeName=n2 NodeAddr=10.250.0.13 NodeHostname=n2 CPUs=${TSC_CPUS:-8} RealMemory=2000 Gres=gpu:2,shard:$((2 * TSC_SHARDS)) State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF
    # TSC_EXTRA_CONF: more slurm.conf lines (e.g. another partition).
    [ -n "${TSC_EXTRA_CONF:-}" ] && printf '%s\n' "$TSC_EXTRA_CONF" >>"$TSC/etc/slurm.conf"
    if [ -n "${TSC_JOB_SUBMIT:-}" ]; then
        cp "$TSC_JOB_SUBMIT" "$TSC/etc/job_submit.lua" &&
            printf '%s\n' "$TSC_GPUS_LUA" >"$TSC/etc/tessel_gpus.lua" &&
            echo "JobSubmitPlugins=lua" >>"$TSC/etc/slurm.conf" ||
            tsc_fail "the job_submit plugin's files" || return 1
    fi
    cat >"$TSC/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=n[1-2] Name=gpu File=$TSC/dev/nvidia[0-1]
NodeName=n[1-2] Name=shard Count=$TSC_SHARDS File=$TSC/dev/nvidia0
NodeName=n[1-2] Name=shard Count=$TSC_SHARDS File=$TSC/dev/nvidia1
CONF
    : >"$TSC/etc/plugstack.conf"
    [ -n "$_plugin" ] && echo "required $_plugin $TSC_PLUGIN_ARGS gres_conf=$TSC/etc/gres.conf" \
        >"$TSC/etc/plugstack.conf"
    export SLURM_CONF=$TSC/etc/slurm.conf
    if [ "${TSC_DBD:-0}" = 1 ]; then
        tsc_dbd_start || return 1
    fi
    nsenter --net=/run/netns/$tsc_ns-ctl unshare --uts sh -c 'hostname ctl; exec slurmctld -i' ||
        tsc_fail "slurmctld did not start ($TSC/log/slurmctld.log)" || return 1
    for _h in n1 n2; do
        # The node's own /run/tessel/slurm, /dev/shm and fake-GPU state.
        nsenter --net=/run/netns/$tsc_ns-$_h unshare --uts --mount --propagation private sh -c "
            hostname $_h && mount -t tmpfs -o mode=0755 tessel /run/tessel/slurm &&
            mount -t tmpfs -o mode=1777 shm /dev/shm &&
            mount -t tmpfs -o mode=0755 node $TSC/node && chmod 1777 $TSC/node &&
            exec slurmd -N $_h" ||
            tsc_fail "slurmd $_h did not start ($TSC/log/slurmd-$_h.log)" || return 1
    done
    _i=0
    while [ "$(tsc sinfo -h -N -o "%N %T" 2>/dev/null | sort -u | grep -c idle)" != 2 ]; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && { tsc_fail "the nodes did not become idle in 60 s"; return 1; }
        sleep 0.1
    done
    return 0
}

# slurm.conf's accounting lines: none, or slurmdbd's (TSC_DBD=1).
tsc_acct_conf() {
    if [ "${TSC_DBD:-0}" != 1 ]; then
        printf '%s\n' AccountingStorageType=accounting_storage/none \
            JobAcctGatherType=jobacct_gather/none
        return
    fi
    cat <<CONF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=10.250.0.11
AccountingStoragePort=26820
AccountingStoragePass=$TSC/munge/munge.sock
AccountingStorageEnforce=associations,limits,qos
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightQOS=1000
PriorityWeightAge=0
PriorityDecayHalfLife=1:00:00
PriorityCalcPeriod=1
CONF
}

# MariaDB and slurmdbd in the controller's namespaces, the cluster and account lab registered
# (TSC_DBD=1; called by tsc_start before slurmctld).
tsc_dbd_start() {
    for _c in mariadbd mariadb-install-db mariadb slurmdbd sacctmgr sacct; do
        command -v $_c >/dev/null || tsc_fail "$_c is not installed (scripts/install-deps.sh)" ||
            return 1
    done
    mkdir -p "$TSC/db" && chown mysql:mysql "$TSC/db" || tsc_fail "the database directory" ||
        return 1
    mariadb-install-db --no-defaults --user=mysql --datadir="$TSC/db/data" \
        --auth-root-authentication-method=socket --skip-test-db >"$TSC/log/mariadb-install.log" 2>&1 ||
        tsc_fail "mariadb-install-db failed ($TSC/log/mariadb-install.log)" || return 1
    # --no-defaults: nothing of the host's /etc/mysql; networking on the controller's loopback.
    nsenter --net=/run/netns/$tsc_ns-ctl mariadbd --no-defaults --user=mysql \
        --datadir="$TSC/db/data" --socket="$TSC/db/mysqld.sock" --pid-file="$TSC/db/mariadbd.pid" \
        --bind-address=127.0.0.1 --port=26819 --skip-name-resolve --innodb-buffer-pool-size=32M \
        --log-error="$TSC/db/mariadbd.log" >/dev/null 2>&1 &
    _i=0
    until mariadb --no-defaults -S "$TSC/db/mysqld.sock" -e 'select 1' >/dev/null 2>&1; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && { tsc_fail "mariadbd did not start in 60 s ($TSC/db/mariadbd.log)"; return 1; }
        sleep 0.1
    done
    _pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    mariadb --no-defaults -S "$TSC/db/mysqld.sock" -e "CREATE USER 'slurm'@'127.0.0.1' \
        IDENTIFIED BY '$_pw'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
        tsc_fail "the database's account for slurmdbd" || return 1
    # slurmdbd reads slurmdbd.conf beside $SLURM_CONF; it must be SlurmUser's and 0600.
    (umask 077 && cat >"$TSC/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$TSC/munge/munge.sock
DbdHost=ctl
DbdAddr=10.250.0.11
DbdPort=26820
SlurmUser=root
PidFile=$TSC/slurmdbd.pid
LogFile=$TSC/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=26819
StorageUser=slurm
StoragePass=$_pw
StorageLoc=slurm_acct_db
CONF
    ) || tsc_fail "slurmdbd.conf" || return 1
    nsenter --net=/run/netns/$tsc_ns-ctl unshare --uts sh -c 'hostname ctl; exec slurmdbd' ||
        tsc_fail "slurmdbd did not start ($TSC/log/slurmdbd.log)" || return 1
    _i=0
    until tsc sacctmgr -n list cluster >/dev/null 2>&1; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && { tsc_fail "slurmdbd did not answer in 60 s ($TSC/log/slurmdbd.log)"; return 1; }
        sleep 0.1
    done
    tsc sacctmgr -i add cluster tessel >/dev/null &&
        tsc sacctmgr -i add account lab cluster=tessel >/dev/null &&
        tsc sacctmgr -i add user root account=lab >/dev/null ||
        tsc_fail "sacctmgr: the cluster, account lab" || return 1
}

tsc_dbd_user() {
    tsc sacctmgr -i add user "$1" account=lab qos="${2:-normal}" >/dev/null
}

# The state of job J ("PENDING", "RUNNING", "COMPLETED", ...), from scontrol (it knows ended
# jobs for MinJobAge, 300 s by default).
tsc_state() {
    tsc scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

tsc_wait_state() {
    _j=$1
    shift
    _i=0
    while :; do
        _s=$(tsc_state "$_j")
        for _w in "$@"; do
            [ "$_s" = "$_w" ] && return 0
        done
        _i=$((_i + 1))
        [ $_i -ge 1200 ] && return 1
        sleep 0.1
    done
}

# tsc_wait_lines FILE PREFIX [N]: wait (bounded, 60 s) until FILE has N (default 1) lines that
# start with PREFIX.
tsc_wait_lines() {
    _i=0
    while [ "$(cat "$1" 2>/dev/null | grep -c "^$2")" -lt "${3:-1}" ]; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && return 1
        sleep 0.1
    done
}

# tsc_mine PID: 0 when the process is in one of this cluster's network namespaces (another
# test's cluster may run at the same time, with jobs of the same ids and the same commands).
tsc_mine() {
    _net=$(stat -L -c %i "/proc/$1/ns/net" 2>/dev/null) || return 1
    for _f in /run/netns/"$tsc_ns"-*; do
        [ "$(stat -L -c %i "$_f" 2>/dev/null)" = "$_net" ] && return 0
    done
    return 1
}

# tsc_gone PATTERN: wait (bounded, 30 s) until no process of this cluster matches PATTERN
# (pgrep -f, then tsc_mine).
tsc_gone() {
    _i=0
    while :; do
        _left=
        for _p in $(pgrep -f "$1"); do
            tsc_mine "$_p" && _left=1
        done
        [ -z "$_left" ] && return 0
        _i=$((_i + 1))
        [ $_i -ge 300 ] && return 1
        sleep 0.1
    done
}

# tsc_wait_reason JOB REASON: poll squeue (bounded, 60 s) until the job's pending reason is
# REASON (the scheduler has looked at it); 1 when it is not.
tsc_wait_reason() {
    _i=0
    while [ "$(tsc squeue -h -j "$1" -o %r)" != "$2" ]; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && return 1
        sleep 0.1
    done
}

tsc_stop() {
    for _p in $TSC_EXP_PIDS; do
        kill "$_p" 2>/dev/null
    done
    TSC_EXP_PIDS=
    [ -n "$TSC" ] || return 0
    if [ -s "$TSC/slurmctld.pid" ]; then
        tsc scancel --full $(tsc squeue -h -o %i 2>/dev/null) >/dev/null 2>&1
        _i=0
        while [ -n "$(tsc squeue -h -o %i 2>/dev/null)" ] && [ $_i -lt 200 ]; do
            _i=$((_i + 1))
            sleep 0.1
        done
    fi
    _pids=
    for _p in "$TSC"/slurmd-n1.pid "$TSC"/slurmd-n2.pid "$TSC/slurmctld.pid" \
              "$TSC/slurmdbd.pid" "$TSC/db/mariadbd.pid" "$TSC/munge/munged.pid"; do
        [ -s "$_p" ] && _pids="$_pids $(cat "$_p")"
    done
    [ -n "$_pids" ] && kill $_pids 2>/dev/null
    _i=0
    for _pid in $_pids; do
        while kill -0 "$_pid" 2>/dev/null && [ $_i -lt 100 ]; do
            _i=$((_i + 1))
            sleep 0.1
        done
        kill -9 "$_pid" 2>/dev/null
    done
    for _h in ctl n1 n2 sw; do
        ip netns del $tsc_ns-$_h 2>/dev/null
    done
    rm -rf "$TSC"
    TSC=
}
