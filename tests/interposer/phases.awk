# phases.awk - split the windows of a tcu-load run (line on stdin) into those
# before another run began (t0), during it (within [from, to], from >= t0 to
# leave its ramp out) and after it (fake clock, ns), and
# print "before=MIN..MAX during=MIN..MAX after=MIN..MAX" (shares in %,
# "none" where no window falls entirely inside).  A window after `to` counts
# only when it starts at least `settle` ns after it.  The run's first window
# (its ramp: the first launches wait for a first measurement) is left out.
# Usage: awk -v t0=T0 -v from=FROM -v to=T1 -v settle=NS -f phases.awk
function field(k,   i, n, kv) {
    n = split($0, kv, " ")
    for (i = 1; i <= n; i++)
        if (index(kv[i], k "=") == 1)
            return substr(kv[i], length(k) + 2)
    return ""
}
function add(ph, v) {
    if (!(ph in lo) || v < lo[ph]) lo[ph] = v
    if (!(ph in hi) || v > hi[ph]) hi[ph] = v
}
function show(ph) { return (ph in lo) ? lo[ph] ".." hi[ph] : "none" }
{
    nw = split(field("windows"), w, ",")
    split(field("wends"), e, ",")
    start = field("t0")
    for (i = 1; i <= nw; i++) {
        end = e[i]
        if (i == 1) ;
        else if (end <= t0) add("before", w[i])
        else if (start >= from && end <= to) add("during", w[i])
        else if (start >= to + settle) add("after", w[i])
        start = end
    }
    print "before=" show("before") " during=" show("during") " after=" show("after")
}
