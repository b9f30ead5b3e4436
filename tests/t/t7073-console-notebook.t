#!/bin/sh
# test-timeout: 500
# t7073-console-notebook.t - a job's Jupyter opened from the console in a real browser (Debian's
# Chromium, playwright-core: web/test/notebook.mjs; docs/job-services.md): nobody's notebook
# job's page has "Open jupyter"; a click opens Jupyter in a new tab on the service's own origin
# (http://jID-jupyter.localhost:PORT/, not the console's), without an opener, its cookie
# not readable by scripts; the notebook's cell runs (print(6*7): 42) over the kernel's
# WebSocket through tesseld.  Then another user's page opened in the same browser (his ticket
# URL: the review's F1) reads nothing of nobody's notebook, by fetch nor through a frame.
# Screenshots: $TESSEL_BUILD/screenshots/notebook/ (console-notebook-link.png, notebook-tree.png,
# notebook-cell.png; copied to docs/screenshots/).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/app/job.js" ] || missing "console not installed (run make)"
command -v jupyter-notebook >/dev/null || missing "jupyter-notebook is needed (scripts/install-deps.sh)"
jobsvc_daemon

cat >"$W/cell.ipynb" <<'NB'
{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
  "source": ["print(6*7)"]}],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
 "nbformat": 4, "nbformat_minor": 5}
NB
chown nobody "$W/cell.ipynb"
nbtessel notebook -d -e PATH=/usr/bin:/bin -e "JUPYTER_RUNTIME_DIR=$W/.rt" \
    -e "JUPYTER_DATA_DIR=$W/.jd" -e "JUPYTER_CONFIG_DIR=$W/.jc" -e "IPYTHONDIR=$W/.ip" \
    >"$TD/o" 2>"$TD/e"
J=$(cat "$TD/o")
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
wait_for "curl -s -o /dev/null --max-time 5 --unix-socket '$TD/data/jobsvc/j$J-jupyter.sock' http://x/api"
is "$(jget .state)" running "nobody's notebook job $J runs"

# Another user (the account daemon) serves a page that tries to read nobody's notebook.
api POST /v1/users '{"name":"daemon"}'
api POST /v1/tokens '{"user":"daemon"}'
DM=$(jget .token)
OW="$TD/other"
mkdir -p "$OW"
NBURL="$(svc_url "$J" jupyter)"
cat >"$OW/index.html" <<HTML
<!DOCTYPE html><title>waiting</title>
<iframe id="f" src="$NBURL/tree"></iframe>
<script>
let r = { fetch: '', frame: '' };
const done = () => { if (r.fetch && r.frame) document.title = 'DONE fetch:' + r.fetch + ' frame:' + r.frame; };
fetch('$NBURL/api/contents', { credentials: 'include' })
  .then((x) => x.text()).then((t) => { r.fetch = 'read ' + t.slice(0, 20); done(); })
  .catch(() => { r.fetch = 'blocked'; done(); });
document.getElementById('f').addEventListener('load', () => {
  try { r.frame = 'read ' + document.getElementById('f').contentDocument.title; }
  catch (e) { r.frame = 'blocked'; }
  done();
});
</script>
HTML
chown -R daemon "$OW"
OPORT=18475
api POST /v1/jobs "{\"argv\":[\"/usr/bin/python3\",\"-m\",\"http.server\",\"--bind\",\"127.0.0.1\",\"$OPORT\"],\"cwd\":\"$OW\",\"services\":[{\"name\":\"web\",\"port\":$OPORT}]}" "$DM"
O=$(jget .id)
wait_for '[ "$(api GET /v1/jobs/$O "" "$DM"; jget .state)" = running ]'
wait_for "curl -s -o /dev/null --max-time 5 --unix-socket '$TD/data/jobsvc/j$O-web.sock' http://x/"
svc_ticket "$O" web "$DM"
OTHER_URL=$URL

SHOTS=$TESSEL_BUILD/screenshots/notebook
rm -rf "$SHOTS"
TESSEL_URL=$TD_URL TOKEN=$NB JOB=$J NOTEBOOK=cell.ipynb SHOTS=$SHOTS OTHER_URL=$OTHER_URL \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 400 node "$WEBSRC/test/notebook.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
for f in console-notebook-link notebook-tree notebook-cell; do
    [ -s "$SHOTS/$f.png" ]
    ok $? "screenshot saved: $SHOTS/$f.png"
done
api POST "/v1/jobs/$J/cancel" "" "$NB"
api POST "/v1/jobs/$O/cancel" "" "$DM"
done_testing
