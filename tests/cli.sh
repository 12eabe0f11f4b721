#!/usr/bin/env bash
# What a newcomer meets at the command line (issue 23): --version, threads that behave on a shared machine,
# progress in logs, and messages that say what went wrong and what to do. Each check pins a message or a
# behaviour.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
loud=(--model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16)
tiny=("${loud[@]}" --quiet)

# --version names the release and the commit, and the OpenMP wait policy sextant chose itself (spin 30000 rounds, then sleep);
# a policy the user set wins.
v=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$S" --version) || fail "--version failed"
echo "$v" | grep -Eq '^sextant [0-9]+\.[0-9]+ \(git [^)]+\)$' || fail "--version: no 'sextant X.Y (git ...)' line: $v"
echo "$v" | grep -q "OpenMP waits spin then sleep (GOMP_SPINCOUNT=30000)" || fail "sextant did not set its spin-then-sleep wait policy: $v"
OMP_WAIT_POLICY=active "$S" --version | grep -q "OpenMP waits active" || fail "the user's OMP_WAIT_POLICY was not kept"

# The build: quiet by default (one object compiles without a line), V=1 shows the command; make test keeps
# the test objects (.SECONDARY), so that the next build does not compile them again.
mk=$(make --no-print-directory BUILD="$tmp/b" "$tmp/b/src/core/rng.o" 2>&1) || fail "make one object: $mk"
[ -z "$mk" ] || fail "a quiet build printed: $mk"
rm -f "$tmp/b/src/core/rng.o"
make --no-print-directory BUILD="$tmp/b" V=1 "$tmp/b/src/core/rng.o" 2>&1 | grep -q -- "-c src/core/rng.c -o $tmp/b/src/core/rng.o" ||
    fail "V=1 did not show the compiler command"
if [ -n "${SEXTANT_BUILD:-}" ]; then
    [ -f "$SEXTANT_BUILD/tests/test_core.o" ] || fail "make test deleted the test objects (no .SECONDARY?)"
fi

# --threads 0 (the default): the thread count of every step is logged, between 1 and the cores.
env -u OMP_NUM_THREADS "$S" train "${tiny[@]}" --steps 3 --out "$tmp/thr" || fail "train with the default threads"
n=$(grep -c '"threads":[1-9]' "$tmp/thr/metrics.jsonl")
[ "$n" -eq 3 ] || fail "expected a thread count on each of 3 metrics lines, got $n"
awk -v c="$(nproc)" -F'"threads":' '{ split($2, a, /[,}]/); if (a[1] < 1 || a[1] > c) bad = 1 } END { exit bad }' \
    "$tmp/thr/metrics.jsonl" || fail "a thread count outside 1..$(nproc)"

# config.json keeps float settings as they were typed (0.007), not as float32 leftovers (0.00700000021607).
"$S" train --model d1-hd16-w32 --train synthetic:64 --batch 2 --seq 8 --steps 1 --lr 0.007 --quiet --out "$tmp/typed" \
    > /dev/null 2>&1 || fail "train --lr 0.007"
for kv in '"lr": 0.007,' '"beta1": 0.9,' '"beta2": 0.95,' '"eps": 1e-8,' '"weight_decay": 0.1,'; do
    grep -qF "$kv" "$tmp/typed/config.json" || fail "config.json: no $kv: $(grep -A12 '"optimizer"' "$tmp/typed/config.json")"
done

# ladder run --jobs more than the cores: no oversubscription, with a note.
"$S" ladder run tests/data/ladder/smoke-a.ladder --out "$tmp/lj" --jobs 64 --rung 0 2> "$tmp/lj.log" || fail "ladder --jobs 64"
grep -q "note: --jobs 64 is more than the $(nproc) cores: $(nproc) runs at a time" "$tmp/lj.log" ||
    fail "no note for --jobs 64: $(cat "$tmp/lj.log")"
grep -q '"threads": 1' "$tmp/lj/"*/config.json ||
    fail "each of $(nproc) jobs should get 1 thread"

grep -q "^ladder smoke-a: run 0 of the plan's 16 (--rung), 1 threads" "$tmp/lj.log" ||
    fail "ladder run --rung: the start line should name the one run: $(head -2 "$tmp/lj.log")"
grep -q "ETA" "$tmp/lj.log" || fail "ladder run: no ETA on the done line"
"$S" ladder run tests/data/ladder/smoke-a.ladder --out "$tmp/lj" --rung -5 2>&1 | grep -q -- "--rung -5: the plan has 16 runs (0..15)" ||
    fail "ladder run --rung -5 should be refused (before: every run trained)"
grep -Eq "^ladder smoke-a: done: 1 of 1 runs finished, 0 failed, in ([0-9]+m[0-9]{2}s|[0-9]+\.[0-9]s)" "$tmp/lj.log" ||
    fail "ladder run: no summary line: $(tail -2 "$tmp/lj.log")"
grep -q "^sextant train: done: " "$tmp/lj/w32-s1/train.log" || fail "a ladder run's train.log has no summary line"

# Progress in logs: with stderr not a terminal, a progress line every SEXTANT_PROGRESS_EVERY seconds (30 by
# default: then only the first step's line in a short run), and a summary line at the end.
SEXTANT_PROGRESS_EVERY=0 "$S" train "${loud[@]}" --steps 5 --out "$tmp/prog" 2> "$tmp/prog.log" || fail "train (progress)"
n=$(grep -Ec '^step [1-5]/5 \| loss [0-9.]+ \| lr [0-9.e+-]+ \| [0-9]+ tok/s \| MFU [0-9.]+% \| ETA ([0-9]+m[0-9]{2}s|[0-9]+\.[0-9]s)' "$tmp/prog.log")
[ "$n" -eq 5 ] || fail "expected 5 progress lines in the log, got $n: $(cat "$tmp/prog.log")"
grep -Eq '^sextant train: done: 5 steps \(5 this time\) in [0-9]+\.[0-9]s, [0-9]+ tok/s; last train loss [0-9.]+(, val loss [0-9.]+)?; ' "$tmp/prog.log" ||
    fail "no summary line: $(tail -1 "$tmp/prog.log")"
"$S" train "${loud[@]}" --steps 5 --out "$tmp/prog30" 2> "$tmp/prog30.log" || fail "train (progress, 30 s)"
[ "$(grep -c '^step ' "$tmp/prog30.log")" -eq 1 ] || fail "a 5-step run should log only its first step: $(cat "$tmp/prog30.log")"
"$S" train "${tiny[@]}" --steps 5 --out "$tmp/progq" 2> "$tmp/progq.log" || fail "train --quiet"
grep -q '^step ' "$tmp/progq.log" && fail "--quiet printed progress lines"
grep -q "note: --" "$tmp/progq.log" && fail "a plain run printed a note: $(cat "$tmp/progq.log")"
# Data-parallel settings in one process are said to do nothing here (before: ignored without a word).
"$S" train "${tiny[@]}" --steps 1 --zero1 --out "$tmp/zero1" 2> "$tmp/zero1.log" || fail "train --zero1 in one process"
grep -q "note: --zero1 applies under mpirun (docs/DISTRIBUTED.md); this is one process" "$tmp/zero1.log" ||
    fail "--zero1 in one process: $(cat "$tmp/zero1.log")"

# sample: text in and out with the run's own vocabulary (recorded in config.json, found without --vocab),
# one line per sample (headers only with --verbose), token ids with --ids, and a text prompt without a
# vocabulary says how to give one.
mkdir -p "$tmp/tok"
for i in $(seq 1 40); do echo "The President said that the people of the Union are strong. Number $i."; done > "$tmp/tok/c.txt"
"$S" tokenize train --vocab-size 300 --out "$tmp/tok/v.sxv" "$tmp/tok/c.txt" 2>/dev/null || fail "tokenize train"
"$S" tokenize shard --vocab "$tmp/tok/v.sxv" --out "$tmp/tok/t.shard" "$tmp/tok/c.txt" 2>/dev/null || fail "tokenize shard"
"$S" train --model d1-w32-hd16 --train "$tmp/tok/t.shard" --batch 2 --seq 16 --steps 2 --quiet --out "$tmp/sm" 2>/dev/null ||
    fail "train on the shard"
grep -q "\"vocab\": \"$tmp/tok/v.sxv\"" "$tmp/sm/config.json" || fail "config.json does not record the vocabulary"
out=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "The President said" --n 2 --max-new 5 --temperature 0 2>&1) ||
    fail "sample with a text prompt: $out"
[ "$(echo "$out" | wc -l)" -eq 2 ] || fail "expected 2 lines (one per sample), got: $out"
[ "$(echo "$out" | grep -c '^The President said')" -eq 2 ] || fail "each sample should start with its prompt: $out"
echo "$out" | grep -q -- "---" && fail "a header line without --verbose: $out"
"$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "The" --max-new 3 --verbose 2>/dev/null | grep -Eq '^--- sample 0 \([0-9]+ tokens' ||
    fail "--verbose: no header line"
mv "$tmp/tok/v.sxv" "$tmp/v-moved.sxv"
"$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "The" --max-new 3 --vocab "$tmp/v-moved.sxv" | grep -q '^The' ||
    fail "--vocab FILE"
out=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "The President said" 2>&1) && fail "a missing vocabulary was accepted"
echo "$out" | grep -q "the run's vocabulary $tmp/tok/v.sxv (in its config.json) is gone: give --vocab" ||
    fail "the recorded vocabulary's absence is not named: $out"
ids=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "5,6,7" --ids --max-new 4 --temperature 0) || fail "--ids"
echo "$ids" | grep -Eq '^[0-9]+(,[0-9]+)*$' || fail "--ids output is not one line of ids: $ids"
out=$("$S" sample --checkpoint "$tmp/thr/checkpoint.sxt" --prompt "The President said" 2>&1) && fail "text without a vocabulary"
echo "$out" | grep -q "is not comma-separated token ids below 64; for a text prompt give --vocab FILE" ||
    fail "no hint to give --vocab: $out"

# sample --draft: speculative decoding with a smaller model of the same vocabulary prints the same greedy text as
# plain sampling, with its acceptance and speed against plain decoding; a draft with another vocabulary is refused.
"$S" train --model d1-w16-hd16 --train "$tmp/tok/t.shard" --batch 2 --seq 16 --steps 2 --quiet --out "$tmp/smd" 2>/dev/null ||
    fail "train the draft"
plain=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --vocab "$tmp/v-moved.sxv" --prompt "The President" --max-new 12 --temperature 0) ||
    fail "plain greedy sample"
spec=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --vocab "$tmp/v-moved.sxv" --prompt "The President" --max-new 12 --temperature 0 \
       --draft "$tmp/smd/checkpoint.sxt" --draft-k 3 --vs-plain 2>"$tmp/spec.err") || fail "sample --draft: $(cat "$tmp/spec.err")"
[ "$spec" = "$plain" ] || fail "speculative greedy text differs from plain: '$spec' vs '$plain'"
grep -Eq '^speculative: draft .* k 3: [0-9]+ of [0-9]+ examined proposals kept \(acceptance [0-9.]+; [0-9]+ proposed\), [0-9.]+ tokens per target forward, 12 tokens in ' "$tmp/spec.err" ||
    fail "no acceptance line: $(cat "$tmp/spec.err")"
grep -Eq '^plain: 12 tokens in .* speculative/plain [0-9.]+x in CPU time, [0-9.]+x wall \(greedy\); 1 of 1 samples identical$' "$tmp/spec.err" ||
    fail "no comparison line: $(cat "$tmp/spec.err")"
# On a terminal, a progress line per sample (before: plain decoding only), ended before the summaries.
if command -v script > /dev/null && [ "$(script -qc 'test -t 2 && echo tty' /dev/null 2>/dev/null | tr -d '\r')" = tty ]; then
    script -qc "'$S' sample --checkpoint '$tmp/sm/checkpoint.sxt' --vocab '$tmp/v-moved.sxv' --prompt 'The' --max-new 12 \
        --temperature 0 --n 2 --draft '$tmp/smd/checkpoint.sxt' --vs-plain > /dev/null" /dev/null | tr '\r' '\n' > "$tmp/tty.err"
    grep -q "^sample: sample 2 of 2 (speculative), step 12 of 12," "$tmp/tty.err" && grep -q "^sample: sample 2 of 2 (plain), step 12 of 12," "$tmp/tty.err" &&
        grep -q "^speculative: draft" "$tmp/tty.err" || fail "speculative progress on a terminal: $(cat "$tmp/tty.err")"
fi
out=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --vocab "$tmp/v-moved.sxv" --prompt "The" --draft "$tmp/thr/checkpoint.sxt" 2>&1) &&
    fail "a draft with another vocabulary was accepted"
echo "$out" | grep -q "the draft model's vocabulary has 64 tokens, the target's 300" || fail "vocabulary mismatch not named: $out"
out=$("$S" sample --checkpoint "$tmp/sm/checkpoint.sxt" --prompt "1" --ids --vs-plain 2>&1) && fail "--vs-plain without --draft"
echo "$out" | grep -q "give --draft CKPT" || fail "--vs-plain without --draft: $out"

# eval and sample take train's --threads: the same numbers at 1 and 2 threads; a bad count is refused.
ev=(eval "$tmp/sm/checkpoint.sxt" --val "$tmp/tok/t.shard" --vocab "$tmp/v-moved.sxv" --task cloze --n 20 --val-loss --batches 2 --batch 2 --seq 16)
e1=$("$S" "${ev[@]}" --threads 1 2>&1) || fail "eval --threads 1: $e1"
e2=$("$S" "${ev[@]}" --threads 2 2>&1) || fail "eval --threads 2: $e2"
[ "$(echo "$e1" | grep -c '^cloze .*acc ')" -eq 1 ] && echo "$e1" | grep -q '^val_loss ' || fail "eval: expected a val_loss and a cloze line: $e1"
[ "$e1" = "$e2" ] || fail "eval differs between 1 and 2 threads: '$e1' vs '$e2'"
sm=(sample --checkpoint "$tmp/sm/checkpoint.sxt" --vocab "$tmp/v-moved.sxv" --prompt "The President" --n 3 --max-new 12 --seed 5)
s1=$("$S" "${sm[@]}" --threads 1) || fail "sample --threads 1"
s2=$("$S" "${sm[@]}" --threads 2) || fail "sample --threads 2"
[ "$(echo "$s1" | wc -l)" -eq 3 ] && [ "$s1" = "$s2" ] || fail "sample differs between 1 and 2 threads: '$s1' vs '$s2'"
refuses_threads() {
    local bad out
    for bad in -1 100000; do
        out=$("$S" "$@" --threads $bad 2>&1) && { fail "$1 --threads $bad was accepted"; continue; }
        echo "$out" | grep -qF -- "sextant $1: --threads must be 0 (the cores other processes leave free) or a thread count from 1 to 1024, not $bad" ||
            fail "$1 --threads $bad said: $out"
    done
}
refuses_threads "${ev[@]}"
refuses_threads "${sm[@]}"
refuses_threads train "${tiny[@]}" --steps 2 --out "$tmp/thbad"

# Silent surprises and messages that say what to do (issue 23, items 4 and 5).
# expect MESSAGE CMD...: the command fails and says MESSAGE.
expect() {
    local msg=$1; shift
    local out
    out=$("$S" "$@" 2>&1) && { fail "accepted: $*"; return; }
    echo "$out" | grep -qF -- "$msg" || fail "$* said: $out (expected: $msg)"
    echo "$out" | grep -q ':-1:' && fail "$* printed a stray ':-1:': $out"
}
expect "model 'd1-w32-hd16-v512': the descriptor's vocabulary 512 differs from the data's 64: drop -v512" \
    train --model d1-w32-hd16-v512 --train synthetic:64 --batch 2 --seq 16 --steps 2 --quiet --out "$tmp/v512"
expect "--resume: $tmp/fresh holds no checkpoint (checkpoint.sxt) to continue; check --out, drop --resume" \
    train "${tiny[@]}" --steps 2 --resume --out "$tmp/fresh"
"$S" train "${tiny[@]}" --steps 2 --resume-or-start --out "$tmp/fresh2" || fail "--resume-or-start on a fresh directory"
"$S" train "${tiny[@]}" --steps 4 --override steps --resume-or-start --out "$tmp/fresh2" 2>&1 | grep -q "done: 4 steps (2 this time)" ||
    fail "--resume-or-start did not continue the run"
expect "unknown action 'stauts': sextant ladder run|status|plan SPEC" ladder stauts tests/data/ladder/smoke-a.ladder
expect "unknown command 'fitt' (did you mean fit?)" fitt
expect "unknown flag --modle (did you mean --model? see --help)" train --modle d1
expect "$tmp/nothere holds none of the ladder's 16 runs: run \`sextant ladder run tests/data/ladder/smoke-a.ladder\` first" \
    fit tests/data/ladder/smoke-a.ladder --runs "$tmp/nothere"
expect "--law does not apply to a ladder spec (a curve ladder is a directory from sextant import) (it takes --with, --val-set, --runs or --out)" fit tests/data/ladder/smoke-a.ladder --law final --runs "$tmp/nothere"
expect "--law does not apply to a ladder spec" fit tests/data/ladder/smoke-a.ladder --law nds --runs "$tmp/nothere"
expect "$tmp/lj: 1 of the ladder's 16 runs are started, not w32-s2; run \`sextant ladder run tests/data/ladder/smoke-a.ladder\` first" \
    fit tests/data/ladder/smoke-a.ladder --runs "$tmp/lj"
expect "cannot open $tmp/nothere/fit.json (No such file or directory)" \
    forecast --fit "$tmp/nothere/fit.json" --model d1-hd8-w48 --flops-ratio 3
expect "cannot open $tmp/nothere.json (No such file or directory)" train "${tiny[@]}" --forecast "$tmp/nothere.json" --out "$tmp/nf"
mkspec() { sed "s|^$1 .*|$1 $2|" tests/data/ladder/smoke-a.ladder > "$tmp/$3.ladder"; }
mkspec batch -8 neg
line=$(grep -n '^batch' "$tmp/neg.ladder" | cut -d: -f1)
expect "$tmp/neg.ladder:$line: batch: expected a whole number in [1, " ladder plan "$tmp/neg.ladder"
expect "not '-8'" ladder plan "$tmp/neg.ladder"
mkspec train "$tmp/nodata/mixture.mix" nodata   # before: "cannot open mixture spec ..." with no word of which spec
expect "$tmp/nodata.ladder: its train data: cannot open mixture spec $tmp/nodata/mixture.mix (No such file or directory)" ladder plan "$tmp/nodata.ladder"
mkspec schedule "wsd:decay=0.2,shape=sqrtt" typo
line=$(grep -n '^schedule' "$tmp/typo.ladder" | cut -d: -f1)
expect "$tmp/typo.ladder:$line: schedule: " ladder plan "$tmp/typo.ladder"
expect "sqrtt" ladder plan "$tmp/typo.ladder"
# A rung that itself repeats its data is warned about before anything trains (the 8-token shard: every rung).
sed "s|^train .*|train tests/fuzz/corpus/shard/v64.bin|" tests/data/ladder/smoke-a.ladder > "$tmp/rep.ladder"
"$S" ladder run "$tmp/rep.ladder" --out "$tmp/rep" --rung 0 > "$tmp/rep.log" 2>&1
grep -q "ladder smoke-a: warning: rung d1-hd8-w32 trains 61952 tokens, 7744.00 passes over tests/fuzz/corpus/shard/v64.bin (8 tokens)" \
    "$tmp/rep.log" || fail "no repeated-data warning for a rung: $(cat "$tmp/rep.log")"
[ "$(grep -c 'warning: rung' "$tmp/rep.log")" -eq 4 ] || fail "expected one warning per rung (4)"

[ $fails -eq 0 ] && echo "cli: all checks passed"
exit $((fails > 0))
