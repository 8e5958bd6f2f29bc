# tests/gpu/steps.sh: the step runner of tests/gpu/coll.sh and coll2.sh. Source it after
# setting out (the output folder), log, T0 (start, epoch s) and BUDGET (s); it starts rows
# (the summary table's lines) and fails (failed steps). RESERVE_DEFAULT is the budget a step
# leaves for what follows it (RESERVE=... on one call overrides it).
rows=()
fails=0
say() { echo "$@" | tee -a "$log"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }

# step_log NAME: the file that holds the output of step NAME
step_log() { echo "$out/$(echo "$1" | tr -c 'a-zA-Z0-9_\n' '_').log"; }

# step NAME LIMIT CMD...: runs CMD under min(LIMIT, budget left - reserve) seconds; with
# STEP_STDOUT set, stdout (JSON rows) goes there and stderr to the step's log. A script may
# define step_skip NAME, which prints why the step cannot run (nothing: it runs).
step() {
    local name=$1 limit=$2
    shift 2
    local lim f t0 rc line verdict why=""
    lim=$(($(left) - ${RESERVE:-$RESERVE_DEFAULT}))
    [ "$lim" -gt "$limit" ] && lim=$limit
    declare -F step_skip >/dev/null && why=$(step_skip "$name")
    if [ -n "$why" ]; then
        rows+=("| $name | \`$*\` | NOT RUN ($why) | 0 | |")
        say "== $name: NOT RUN ($why)"
        return
    fi
    if [ "$lim" -lt 20 ]; then
        rows+=("| $name | \`$*\` | NOT RUN (budget) | 0 | |")
        say "== $name: NOT RUN (budget left $(left) s)"
        return
    fi
    f=$(step_log "$name")
    say "== $name (limit ${lim}s): $*"
    t0=$(date +%s)
    if [ -n "${STEP_STDOUT:-}" ]; then
        timeout -k 5 "$lim" "$@" >"$STEP_STDOUT" 2>"$f"
    else
        timeout -k 5 "$lim" "$@" >"$f" 2>&1
    fi
    rc=$?
    line=$(grep -E 'devtest: [0-9]+ passed' "$f" | tail -1 | sed 's/^devtest: //')
    [ -n "${STEP_STDOUT:-}" ] && line="$(grep -c '^{' "$STEP_STDOUT" 2>/dev/null) rows"
    [ -z "$line" ] && line="(no summary line: $(grep -m1 -E 'FAIL|hang|still running|panic|Error|error' "$f" | cut -c1-160))"
    verdict=PASS
    if [ "$rc" != 0 ]; then
        verdict="FAIL (rc $rc$([ "$rc" = 124 ] && echo ', timeout'))"
        fails=$((fails + 1))
    elif grep -q 'not prepared ahead' "$f"; then
        # a growth prepared ahead must be adopted on the GPU machine
        verdict="FAIL (the growth prepared ahead fell back: $(grep -m1 -o 'not prepared ahead.*' "$f" | cut -c1-120))"
        fails=$((fails + 1))
    fi
    rows+=("| $name | \`$*\` | $verdict | $(($(date +%s) - t0)) | $line |")
    say "   -> $verdict in $(($(date +%s) - t0)) s: $line"
    grep -E '^devtest: (FAIL|ok)' "$f" >>"$log"
}

# failing_tests: the summary's excerpt of every step log's failures
failing_tests() {
    local f
    echo '```'
    for f in "$out"/*PEs*.log; do
        [ -f "$f" ] || continue
        echo "-- $(basename "$f")"
        grep -E 'devtest: (PE [0-9]+: )?FAIL|hang\?|panic:|timed out|trap|exiting|LoadModule|goshmem: PE|nccl_perf: PE|wrong values' "$f" | cut -c1-400 | head -30
    done
    echo '```'
}
