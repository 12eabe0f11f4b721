#!/usr/bin/env bash
# What a newcomer meets at the command line (issue 23): --version, threads that behave on a shared machine,
# progress in logs, and messages that say what went wrong and what to do. Each check pins a message or a
# behaviour.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
tiny=(--model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --quiet)

# --version names the release and the commit, and the OpenMP wait policy sextant chose itself (passive);
# a policy the user set wins.
v=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$S" --version) || fail "--version failed"
echo "$v" | grep -Eq '^sextant [0-9]+\.[0-9]+ \(git [^)]+\)$' || fail "--version: no 'sextant X.Y (git ...)' line: $v"
echo "$v" | grep -q "OpenMP waits passive" || fail "sextant did not set the passive wait policy: $v"
OMP_WAIT_POLICY=active "$S" --version | grep -q "OpenMP waits active" || fail "the user's OMP_WAIT_POLICY was not kept"

# --threads 0 (the default): the thread count of every step is logged, between 1 and the cores.
env -u OMP_NUM_THREADS "$S" train "${tiny[@]}" --steps 3 --out "$tmp/thr" || fail "train with the default threads"
n=$(grep -c '"threads":[1-9]' "$tmp/thr/metrics.jsonl")
[ "$n" -eq 3 ] || fail "expected a thread count on each of 3 metrics lines, got $n"
awk -v c="$(nproc)" -F'"threads":' '{ split($2, a, /[,}]/); if (a[1] < 1 || a[1] > c) bad = 1 } END { exit bad }' \
    "$tmp/thr/metrics.jsonl" || fail "a thread count outside 1..$(nproc)"

# ladder run --jobs more than the cores: no oversubscription, with a note.
"$S" ladder run tests/data/ladder/smoke-a.ladder --out "$tmp/lj" --jobs 64 --rung 0 2> "$tmp/lj.log" || fail "ladder --jobs 64"
grep -q "note: --jobs 64 is more than the $(nproc) cores: $(nproc) runs at a time" "$tmp/lj.log" ||
    fail "no note for --jobs 64: $(cat "$tmp/lj.log")"
grep -q '"threads": 1' "$tmp/lj/"*/config.json ||
    fail "each of $(nproc) jobs should get 1 thread"

[ $fails -eq 0 ] && echo "cli: all checks passed"
exit $((fails > 0))
