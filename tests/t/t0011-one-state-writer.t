#!/bin/sh
# t0011-one-state-writer.t - every change of a job's state goes through the job model: outside
# src/daemon/jobmodel.{c,h} and libstore, no code under src/ holds SQL that writes the jobs
# table (UPDATE/INSERT/REPLACE/DELETE on jobs) nor calls the store's state-writing functions
# (tstore_job_add, tstore_job_write, and the old per-transition ones, should they come back).
# Unit tests' fixtures (src/**/test/) may put rows in a store of their own to set up a case:
# they are not a path of the product, so they are not checked.
# The check runs on the tree, then on copies with one bad line added, which it must refuse.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"

plan 7

# check SRCDIR: prints each offending line (file:line:text); exit 0 when there is none.
check() {
    src=$1
    # Statement heads and calls, case-insensitive for SQL; file names relative to src/.
    sql='(update|insert([[:space:]]+or[[:space:]]+[a-z]+)?[[:space:]]+into|replace[[:space:]]+into|delete[[:space:]]+from)[[:space:]]+"?jobs\b'
    calls='\btstore_job_(add|write|set_running|set_pids|finish|set_cancel|requeue|unstart|set_suspended)[[:space:]]*\('
    bad=$( (cd "$src" && grep -rnE -i --include='*.c' --include='*.h' "$sql" . ;
            cd "$src" && grep -rnE --include='*.c' --include='*.h' "$calls" .) |
        grep -vE '^\./(daemon/jobmodel\.[ch]|common/libstore/)' | grep -vE '^\./([^:]*/)?test/' )
    [ -z "$bad" ] && return 0
    printf '%s\n' "$bad"
    return 1
}

[ -d "$TESSEL_SRCDIR/src/daemon" ] || missing "the source tree at $TESSEL_SRCDIR/src"
[ -f "$TESSEL_SRCDIR/src/daemon/jobmodel.c" ] || missing "src/daemon/jobmodel.c"

OUT=$(check "$TESSEL_SRCDIR/src")
ok $? "no code outside the job model and libstore writes a job's state"
[ -n "$OUT" ] && printf '%s\n' "$OUT" | sed 's/^/# /'

# The model does write through the store (the check would be vacuous otherwise).
grep -qE '\btstore_job_write[[:space:]]*\(' "$TESSEL_SRCDIR/src/daemon/jobmodel.c"
ok $? "jobmodel.c is where tstore_job_write is called"

TMP=$(mktemp -d /tmp/t0011.XXXXXX) || missing "mktemp"
trap 'rm -rf "$TMP"' EXIT

# try NAME FILE LINE: a copy of src/ with LINE appended to FILE; the check must fail and
# name that file.
try() {
    rm -rf "$TMP/src"
    cp -r "$TESSEL_SRCDIR/src" "$TMP/src" || missing "a copy of src/"
    printf '%s\n' "$3" >> "$TMP/src/$2"
    OUT=$(check "$TMP/src")
    rc=$?
    case "$OUT" in "./$2:"*) named=0 ;; *) named=1 ;; esac
    [ $rc -ne 0 ] && [ $named -eq 0 ]
    ok $? "$1 is refused, at $2"
}

try "a call of tstore_job_write in the tick" daemon/tick.c \
    'static void bad(tessd_t *d, tstore_job_t *j) { tstore_job_write(d->store, j, NULL); }'
try "SQL that updates jobs.state in a handler" daemon/api/jobs.c \
    'static const char *bad_sql = "UPDATE jobs SET state = 3 WHERE id = ?1";'
try "lower-case SQL inserting a job" daemon/api/queues.c \
    'static const char *bad_sql = "insert into jobs(state) values (0)";'
try "an old per-transition store call coming back" daemon/suspend.c \
    'static void bad(tstore_t *s) { tstore_job_set_suspended (s, 1, 0, NULL); }'
try "a job insert outside the model" cmd/tessel/show.c \
    'static void bad(tstore_t *s, tstore_job_t *j) { tstore_job_add(s, j, NULL); }'
