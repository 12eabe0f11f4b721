#!/usr/bin/env bash
# compare --run and --until-decided train all ladders' runs in one job pool (scale/ladder.h): the same runs
# with the same seeds and options as training the ladders one after another, so the same files (metrics,
# checkpoints, configs but for their paths); runs start largest first across the ladders; a failed run is
# named with its ladder, the others still train.
set -u
S=$(realpath "${SEXTANT:-./sextant}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# Three ladders of different sizes: a and b share widths (b has a SwiGLU MLP and clips gradients at 0.5, so
# that a run trained with another ladder's spec would differ), c is wider.
spec() {   # NAME MODEL WIDTHS SEEDS
    printf 'name %s\ntrain synthetic:64\nmodel %s\nwidths %s\nseeds %s\ntokens_per_param 2\nseq 16\nbatch 4\nlr 2e-2\nlr_ref_width 16\nwarmup 0.05\neval_batches 1\neval_at 0.5,1\n' "$@"
}
mkdir -p "$tmp/pool" "$tmp/seq"
spec pa 'd1-hd8-w{width}' '8 16 24' 2 > "$tmp/pool/pa.ladder"
{ spec pb 'd1-hd8-w{width}-swiglu' '8 16 24' 2; echo 'extra --clip 0.5'; } > "$tmp/pool/pb.ladder"
spec pc 'd1-hd8-w{width}' '16 24 32' 2 > "$tmp/pool/pc.ladder"
specs=(pa.ladder pb.ladder pc.ladder)

# The pool: the ladders' 2 seeds with --run, then one more seed in one round of --until-decided (its budget
# is one round: 1.01 x the FLOPs of every ladder's seed-3 runs).
round=0
for s in "${specs[@]}"; do
    sed 's/^seeds 2/seeds 3/' "$tmp/pool/$s" > "$tmp/seq/$s"
    round=$(awk -v r=$round '$2 ~ /-s3$/ { r += $(NF-2) } END { printf "%.6g", r }' <("$S" ladder plan "$tmp/seq/$s"))
done
(cd "$tmp/pool" && "$S" compare "${specs[@]}" --run --jobs 2) > "$tmp/run.out" 2> "$tmp/run.log" || { fail "compare --run"; cat "$tmp/run.log"; }
grep -q "^3 ladders in one pool, largest runs first: 2 at a time" "$tmp/run.log" || fail "no pool line: $(head -5 "$tmp/run.log")"
# Largest first across the ladders (no branches here, so the start order is the pool's order whatever the
# timing): the FLOPs of the start lines never increase, and the ladders interleave (pc's w16 after pa's w24).
awk '$1 == "start" { f = $(NF-1); if (n++ && f > last + 0) bad = 1; last = f } END { exit bad || n != 18 }' "$tmp/run.log" ||
    fail "runs should start largest first, 18 of them: $(grep start "$tmp/run.log")"
[ "$(grep '^  start' "$tmp/run.log" | awk '{print $2}' | grep -n 'pa/w24-s1\|pc/w16-s1' | cut -d: -f2 | tr '\n' ' ')" = "pa/w24-s1 pc/w16-s1 " ] ||
    fail "pa's w24 should start before pc's w16"
(cd "$tmp/pool" && "$S" compare "${specs[@]}" --until-decided --budget-flops "$(awk -v r=$round 'BEGIN { print 1.01 * r }')" --jobs 2) \
    > "$tmp/until.out" 2> "$tmp/until.log" || { fail "compare --until-decided"; cat "$tmp/until.log"; }
grep -q "stopped (budget spent) after 1 round, 3 seeds per rung" "$tmp/until.out" || fail "one round expected: $(cat "$tmp/until.out")"
[ "$(grep -c '^  start .*-s3 ' "$tmp/until.log")" -eq 9 ] && grep -q "^3 ladders in one pool" "$tmp/until.log" ||
    fail "the round should train the 9 seed-3 runs in one pool: $(cat "$tmp/until.log")"
# On ladders not trained yet, their own seeds count against the budget: the one round's budget is spent on
# them (about twice the round), so no round follows.
mkdir -p "$tmp/fresh"
cp "$tmp/pool/"*.ladder "$tmp/fresh/"
(cd "$tmp/fresh" && "$S" compare "${specs[@]}" --until-decided --budget-flops "$(awk -v r=$round 'BEGIN { print 1.01 * r }')" --jobs 2) \
    > "$tmp/fresh.out" 2> "$tmp/fresh.log" || { fail "compare --until-decided on fresh ladders"; cat "$tmp/fresh.log"; }
grep -q "stopped (budget spent) after 0 rounds, 2 seeds per rung, 0 FLOPs added after [0-9.e+]* FLOPs of the ladders' own seeds" \
    "$tmp/fresh.out" && [ "$(grep -c '^  start ' "$tmp/fresh.log")" -eq 18 ] ||
    fail "the first seeds should train inside the budget and leave none for a round: $(cat "$tmp/fresh.out")"
# The ladder directories record the added seeds (seeds.json): the plan and a plain compare find them.
(cd "$tmp/pool" && "$S" ladder plan pa.ladder) | grep -q " w24-s3 " || fail "ladder plan should read runs/pa/seeds.json"
(cd "$tmp/pool" && "$S" compare "${specs[@]}" --out cmp.json > "$tmp/plain.out") && grep -q '"seeds": 3' "$tmp/pool/cmp.json" ||
    fail "compare should find 3 seeds per rung in seeds.json"
# and, its verdicts being fixed-sample ones, says that those seeds were tested look by look
grep -q "^note: pa holds seeds (or a rung) --until-decided added as it tested look by look" "$tmp/plain.out" ||
    fail "a plain compare of ladders --until-decided extended should say so: $(cat "$tmp/plain.out")"

# The same ladders one after another with `ladder run`, seeds 1-3.
for s in "${specs[@]}"; do
    "$S" ladder run "$tmp/seq/$s" --out "$tmp/seq/${s%.ladder}" --jobs 2 2>/dev/null || fail "ladder run $s"
done
n=0
for d in "$tmp"/seq/p?/w*-s*; do
    name=${d#"$tmp/seq/"} p="$tmp/pool/runs/$name"
    n=$((n+1))
    cmp -s "$d/checkpoint.sxt" "$p/checkpoint.sxt" || fail "$name: checkpoints differ"
    # metrics.jsonl: equal but for the throughput; config.json: but for the output path.
    diff <(sed 's/"tok_per_s":[^,]*,"mfu":[^,]*,//' "$d/metrics.jsonl") <(sed 's/"tok_per_s":[^,]*,"mfu":[^,]*,//' "$p/metrics.jsonl") >/dev/null ||
        fail "$name: metrics differ"
    diff <(grep -v '"out":' "$d/config.json") <(grep -v '"out":' "$p/config.json") > /dev/null || fail "$name: configs differ"
done
[ $n -eq 27 ] || fail "expected 27 sequential runs to compare, found $n"
# Breaking a run's metrics is caught (the comparison above can fail).
diff <(sed 's/"tok_per_s":[^,]*,"mfu":[^,]*,//' "$tmp/seq/pa/w8-s1/metrics.jsonl") \
     <(sed 's/"tok_per_s":[^,]*,"mfu":[^,]*,//' "$tmp/pool/runs/pa/w8-s2/metrics.jsonl") >/dev/null && fail "seeds 1 and 2 should differ"

# A run that cannot start (its directory is a file): named with its ladder, the other runs still train, and
# the command fails naming it (two of the ladders).
mkdir -p "$tmp/bad/runs/pb"; : > "$tmp/bad/runs/pb/w16-s2"
cp "$tmp/pool/"*.ladder "$tmp/bad/"
(cd "$tmp/bad" && "$S" compare pa.ladder pb.ladder --run --jobs 2) > "$tmp/bad.out" 2> "$tmp/bad.log" && fail "a failed run should fail compare --run"
grep -q "^  FAILED pb/w16-s2 " "$tmp/bad.log" || fail "the failed run should be named ladder/run: $(grep FAILED "$tmp/bad.log")"
grep -q "1 ladder run(s) failed (pb/w16-s2; " "$tmp/bad.log" || fail "the error should name the failed run: $(tail -1 "$tmp/bad.log")"
[ "$(ls "$tmp"/bad/runs/*/*/DONE | wc -l)" -eq 11 ] || fail "the other 11 runs should finish"

# The binary's file removed (or replaced by a rebuild) while a ladder trains: every run still starts, from the
# binary the ladder runs (each once failed with an empty train.log). One run at a time, the file gone as soon as
# the ladder runs, before its second run starts.
mkdir -p "$tmp/gone"; cp "$S" "$tmp/gone/sx"; cp "$tmp/pool/pa.ladder" "$tmp/gone/"
(cd "$tmp/gone" && ./sx ladder run pa.ladder --jobs 1 > ladder.out 2> ladder.log) & pid=$!
for _ in $(seq 400); do grep -q start "$tmp/gone/ladder.log" 2>/dev/null && break; sleep 0.02; done
rm "$tmp/gone/sx"
wait $pid || fail "the ladder failed once its binary's file was gone: $(tail -3 "$tmp/gone/ladder.log")"
[ "$(ls "$tmp"/gone/runs/pa/*/DONE 2>/dev/null | wc -l)" -eq 6 ] || fail "every run should finish without the binary's file: $(grep -c DONE <(ls -R "$tmp/gone/runs"))"

# Two ladders with one name (one directory) train its runs once; with different plans they are refused.
(cd "$tmp/pool" && "$S" compare pa.ladder pa.ladder --run --jobs 2) > /dev/null 2> "$tmp/same.log" || fail "a ladder twice"
grep -q "ladder pa: its runs are ladder pa's" "$tmp/same.log" && ! grep -q '^  start' "$tmp/same.log" || fail "a ladder twice: $(cat "$tmp/same.log")"
sed 's/^widths .*/widths 8 16/' "$tmp/pool/pa.ladder" > "$tmp/pool/pa2.ladder"
(cd "$tmp/pool" && "$S" compare pa.ladder pa2.ladder --run) 2>&1 | grep -q "ladders pa and pa write to the same directory runs/pa with different plans" ||
    fail "two plans in one directory should be refused"

echo "ladder_pool.sh: $fails failed"
[ $fails -eq 0 ]
