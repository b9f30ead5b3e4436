#!/bin/sh
# t8001-install-layout.t - `make install DESTDIR=` lays out what docs/install.md says, with
# safe modes (root's, nothing set-uid, nothing writable by group or others), keeps a changed
# configuration on a second install; a tesseld run from its installed place (the DESTDIR tree
# bind-mounted on /usr/local in a private mount namespace: the host's /usr/local is untouched)
# finds tessel-shim, libtessel-cuda.so, the fake GPU libraries and the console there, not
# beside itself; `make uninstall` removes everything but a configuration the admin changed.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
for c in make curl jq unshare; do
    command -v $c >/dev/null || bail "$c is needed"
done
[ "$(id -u)" = 0 ] || bail "must run as root (files owned by root, a private mount namespace)"

# The build tree under test, as the Makefile names it (O=build or build/san).
case $TESSEL_BUILD in
"$TESSEL_SRCDIR"/*) O=${TESSEL_BUILD#"$TESSEL_SRCDIR"/} ;;
*) O=$TESSEL_BUILD ;;
esac
td_setup
chmod 755 "$TD"
R="$TD/root"
make -s -C "$TESSEL_SRCDIR" O="$O" install DESTDIR="$R" >"$TD/install.log" 2>&1
is "$?" 0 "make install DESTDIR=... (PREFIX=/usr/local) succeeds"
P="$R/usr/local"
mode() { stat -c '%a %U:%G' "$1" 2>/dev/null; }
is "$(mode "$P/bin/tessel")" "755 root:root" "tessel in PREFIX/bin, 0755 root"
is "$(mode "$P/sbin/tesseld")" "755 root:root" "tesseld in PREFIX/sbin, 0755 root"
is "$(mode "$P/libexec/tessel/tessel-shim")" "755 root:root" \
    "tessel-shim in PREFIX/libexec/tessel, 0755 root (no set-uid bit)"
is "$(mode "$P/lib/tessel/libtessel-cuda.so")" "644 root:root" \
    "libtessel-cuda.so in PREFIX/lib/tessel, 0644"
is "$(mode "$P/lib/tessel/fake/libcuda.so.1") $(mode "$P/lib/tessel/fake/libnvidia-ml.so.1")" \
    "644 root:root 644 root:root" "the fake GPU libraries in PREFIX/lib/tessel/fake"
cmp -s "$TESSEL_BUILD/share/tessel/web/index.html" "$P/share/tessel/web/index.html"
ok $? "the console in PREFIX/share/tessel/web"
is "$(grep '^ExecStart=' "$P/lib/systemd/system/tesseld.service")" \
    "ExecStart=/usr/local/sbin/tesseld" "the unit starts the installed tesseld"
grep -q '^KillMode=process$' "$P/lib/systemd/system/tesseld.service"
ok $? "the unit stops tesseld alone (KillMode=process): jobs outlive a restart"
is "$(grep '^d ' "$P/lib/tmpfiles.d/tessel.conf" | tr -s ' ' | tr '\n' ';')" \
    "d /run/tessel 0755 root root -;d /var/lib/tessel 0711 root root -;" \
    "tmpfiles.d: /run/tessel 0755, /var/lib/tessel 0711, root's"
is "$(mode "$P/etc/tessel/tesseld.conf")" "644 root:root" "the configuration in PREFIX/etc/tessel"
is "$(find "$R" -perm /6000 | wc -l)" 0 "nothing installed is set-uid or set-gid"
is "$(find "$R" ! -type l -perm /022 | wc -l)" 0 "nothing installed is writable by group or others"
is "$(find "$R" ! -user root | wc -l)" 0 "everything installed is root's"

# The installed tesseld, at its place, finds its siblings in the installed layout.
unshare -m --propagation private sh -c \
    'mount --bind "$1" /usr/local && exec /usr/local/sbin/tesseld --data-dir "$2/data" \
        --listen 127.0.0.1:0 --socket "$2/tesseld.sock" --fake-gpus 1xT4:16G --no-cgroups' \
    sh "$P" "$TD" >"$TD/tesseld.log" 2>&1 &
TD_PID=$!
TD_PIDS="$TD_PID"
wait_for '[ -s "$TD/data/tesseld.addr" ] || ! kill -0 $TD_PID 2>/dev/null'
[ -s "$TD/data/tesseld.addr" ] || { sed 's/^/#   /' "$TD/tesseld.log"; bail "installed tesseld did not start"; }
TD_URL="http://$(cat "$TD/data/tesseld.addr")"
TD_ADMIN=$(cat "$TD/data/admin.token")
is "$(readlink /proc/$TD_PID/exe)" "/usr/local/sbin/tesseld" "tesseld runs from PREFIX/sbin"
api GET /
is "$CODE $(grep -c '<html' "$TD/out")" "200 1" "it serves the installed console (no --web-root)"
api POST /v1/jobs '{"argv":["sh","-c","env >env.txt; touch ready; sleep 60"],"gpu":0.5}'
is "$CODE" 201 "a job on a simulated GPU is accepted"
J=$(jget .id)
JD="$TD/data/jobs/$J"
wait_for '[ -e "'"$JD"'/ready" ] && [ -s "'"$JD"'/pid" ]'
ok $? "the job runs (the fake GPU libraries were found in PREFIX/lib/tessel/fake)"
read -r SHIM _ JOB <"$JD/pid"
is "$(readlink /proc/$SHIM/exe)" "/usr/local/libexec/tessel/tessel-shim" \
    "its supervisor is the installed tessel-shim"
is "$(grep -E '^LD_PRELOAD=' "$JD/env.txt")" "LD_PRELOAD=/usr/local/lib/tessel/libtessel-cuda.so" \
    "the job preloads the installed libtessel-cuda.so"
is "$(grep -E '^LD_LIBRARY_PATH=' "$JD/env.txt")" "LD_LIBRARY_PATH=/usr/local/lib/tessel/fake" \
    "and finds the installed fake libraries"
grep -q "not found" "$TD/tesseld.log"
ok "$([ $? -ne 0 ]; echo $?)" "tesseld's log reports nothing not found"
api POST "/v1/jobs/$J/cancel"
wait_for '[ "$(job_state '"$J"')" = cancelled ]'
td_stop
is "$?" 0 "tesseld stops cleanly"

# A second install keeps the configuration the admin changed.
echo "# changed by the admin" >>"$P/etc/tessel/tesseld.conf"
make -s -C "$TESSEL_SRCDIR" O="$O" install DESTDIR="$R" >"$TD/install2.log" 2>&1
is "$?" 0 "a second make install succeeds"
is "$(tail -1 "$P/etc/tessel/tesseld.conf")" "# changed by the admin" \
    "and keeps the changed configuration"

make -s -C "$TESSEL_SRCDIR" O="$O" uninstall DESTDIR="$R" >"$TD/uninstall.log" 2>&1
is "$?" 0 "make uninstall DESTDIR=... succeeds"
is "$(find "$R" ! -type d)" "$P/etc/tessel/tesseld.conf" \
    "it removes every installed file but the changed configuration"
grep -q "tesseld.conf was changed, kept" "$TD/uninstall.log"
ok $? "and says it kept it"
rm -f "$P/etc/tessel/tesseld.conf"
make -s -C "$TESSEL_SRCDIR" O="$O" install DESTDIR="$R" >/dev/null 2>&1 &&
    make -s -C "$TESSEL_SRCDIR" O="$O" uninstall DESTDIR="$R" >/dev/null 2>&1
is "$(find "$R" ! -type d | wc -l)" 0 "an unchanged configuration is removed with the rest"
done_testing
