#!/usr/bin/env bash
# What a resume must get right beyond the bytes (tests/faults.sh has the kill loops): a closed terminal
# (SIGHUP) stops with a checkpoint like SIGTERM; a --save-at copy lost between the two checkpoint files is
# written again on resume; a metrics log that fell behind its checkpoint is refused, not continued with a
# gap; a resume with other settings (batch, LR, seed, schedule, data, ...) is refused unless --override names
# them. Each case once failed: SIGHUP killed the run and its steps since the last checkpoint, the copy stayed
# lost (and --branch-from failed later), the resumed run finished with a gap that `fit` rejected, and
# another run's settings were accepted and config.json rewritten. The new optimizers' state survives a resume.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
short=(--model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 8 --threads 1 --quiet --ckpt-every 4)

# SIGHUP: a checkpoint at the current step, exit 1 with the stop message.
"$S" train --model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 100000 --threads 1 --quiet \
    --out "$tmp/hup" 2>"$tmp/hup.err" &
pid=$!
for _ in $(seq 3000); do [ -s "$tmp/hup/metrics.jsonl" ] && break; sleep 0.02; done
kill -HUP $pid; wait $pid; rc=$?
[ $rc -eq 1 ] || fail "SIGHUP: exit code $rc, expected 1 (killed by the signal?)"
grep -q "stopped at step [0-9]*; checkpoint written" "$tmp/hup.err" || fail "SIGHUP message: $(cat "$tmp/hup.err")"
[ -f "$tmp/hup/checkpoint.sxt" ] || fail "SIGHUP: no checkpoint"

# A --save-at copy missing beside a checkpoint at its step (a kill between the two files): the resume
# writes it again, identical to the one the straight run kept.
"$S" train "${short[@]}" --save-at 0.5 --out "$tmp/ref" || fail "reference run with --save-at"
SEXTANT_INJECT_NAN_AT_STEP=5 "$S" train "${short[@]}" --save-at 0.5 --out "$tmp/lost" 2>/dev/null && fail "NaN run should stop"
[ -f "$tmp/lost/ckpt-4.sxt" ] || fail "no ckpt-4.sxt at the save-at step"
rm -f "$tmp/lost/ckpt-4.sxt"
"$S" train "${short[@]}" --save-at 0.5 --out "$tmp/lost" --resume || fail "resume after a lost kept copy"
cmp -s "$tmp/ref/ckpt-4.sxt" "$tmp/lost/ckpt-4.sxt" || fail "the resume did not write ckpt-4.sxt again"
"$S" train "${short[@]}" --schedule wsd:decay=0.5 --branch-from "$tmp/lost/ckpt-4.sxt" --out "$tmp/branch" ||
    fail "--branch-from the rewritten copy"

# The hyperball optimizers and cautious decay carry their state (moments, momentum, each matrix's radius)
# through a checkpoint: stopped by a NaN after the step-4 checkpoint and resumed, the run ends on the bytes of
# the straight one.
for opt in "--optimizer adamh --cautious-wd" "--optimizer muonh" "--optimizer muon --muon-wd 0.1 --cautious-wd"; do
    o=(--model d1-w32-hd16-untied --train synthetic:64 --batch 2 --seq 16 --steps 8 --threads 1 --quiet --ckpt-every 4 $opt)
    "$S" train "${o[@]}" --out "$tmp/h_ref" || fail "$opt: straight run"
    SEXTANT_INJECT_NAN_AT_STEP=6 "$S" train "${o[@]}" --out "$tmp/h_cut" 2>/dev/null && fail "$opt: NaN run should stop"
    "$S" train "${o[@]}" --out "$tmp/h_cut" --resume || fail "$opt: resume"
    cmp -s "$tmp/h_ref/checkpoint.sxt" "$tmp/h_cut/checkpoint.sxt" || fail "$opt: resumed run differs from the straight one"
    rm -rf "$tmp/h_ref" "$tmp/h_cut"
done

# A log that ends before its checkpoint: refused with both steps named, the log left as it was.
SEXTANT_INJECT_NAN_AT_STEP=5 "$S" train "${short[@]}" --out "$tmp/gap" 2>/dev/null && fail "NaN run should stop"
head -n 2 "$tmp/gap/metrics.jsonl" > "$tmp/gap/m" && mv "$tmp/gap/m" "$tmp/gap/metrics.jsonl"
out=$("$S" train "${short[@]}" --out "$tmp/gap" --resume 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a log behind its checkpoint: exit $rc, expected 1"
echo "$out" | grep -q "metrics.jsonl ends at step 2 but the checkpoint is at step 4" || fail "gap message: $out"
[ "$(wc -l < "$tmp/gap/metrics.jsonl")" -eq 2 ] && [ ! -f "$tmp/gap/DONE" ] || fail "the refused resume changed the run"

# --resume continues the same run: changed settings are refused with every difference listed and nothing
# touched; --override names a deliberate change (extending --steps); flags that only watch may change.
"$S" train "${short[@]}" --out "$tmp/same" || fail "run to resume"
for change in "--lr 0.01" "--batch 3" "--seq 8" "--seed 2" "--schedule linear" "--dtype bf16" "--grad-accum 2" \
              "--wd 0.2" "--clip 0.5" "--train synthetic:65" "--warmup 2" "--model d1-w16-hd16"; do
    cp "$tmp/same/config.json" "$tmp/config.before"
    out=$("$S" train "${short[@]}" $change --out "$tmp/same" --resume 2>&1); rc=$?
    [ $rc -eq 1 ] && echo "$out" | grep -q "holds a run with other settings: ${change%% *} " ||
        fail "resume with $change: exit $rc: $out"
    cmp -s "$tmp/same/config.json" "$tmp/config.before" || fail "resume with $change rewrote config.json"
done
out=$("$S" train "${short[@]}" --lr 0.01 --seed 5 --out "$tmp/same" --resume 2>&1)
echo "$out" | grep -q "other settings: --lr 0.01 (was 0.003), --seed 5 (was 1)" || fail "two differences: $out"
"$S" train "${short[@]}" --threads 2 --eval-every 2 --ckpt-every 2 --out "$tmp/same" --resume || fail "watching flags must not block a resume"
"$S" train "${short[@]}" --steps 12 --override steps --out "$tmp/same" --resume || fail "--override steps"
[ "$(wc -l < "$tmp/same/metrics.jsonl")" -eq 12 ] || fail "--override steps did not extend the run to 12 steps"

# The same data named another way (relative when started, absolute from another directory on resume) is the
# same run; another file is not (before: --train "/abs/d.shard" (was "d.shard") refused the same file).
printf 'the quick brown fox jumps over the lazy dog\n' > "$tmp/c.txt"
"$S" tokenize train --vocab-size 300 --out "$tmp/v.sxv" "$tmp/c.txt" 2>/dev/null &&
    "$S" tokenize shard --vocab "$tmp/v.sxv" --out "$tmp/d.shard" "$tmp/c.txt" 2>/dev/null && cp "$tmp/d.shard" "$tmp/e.shard" ||
    fail "make a shard"
rel=(--model d1-w32-hd16 --batch 1 --seq 4 --threads 1 --quiet --ckpt-every 2)
(cd "$tmp" && "$S" train "${rel[@]}" --train d.shard --steps 2 --out rel) || fail "a run with a relative --train"
"$S" train "${rel[@]}" --train "$tmp/d.shard" --steps 4 --override steps --out "$tmp/rel" --resume ||
    fail "resume naming the same shard by its absolute path"
out=$("$S" train "${rel[@]}" --train "$tmp/e.shard" --steps 6 --override steps --out "$tmp/rel" --resume 2>&1) &&
    fail "resume on another shard accepted"
echo "$out" | grep -q "other settings: --train \"$tmp/e.shard\"" || fail "another shard: $out"
# The same path rewritten with other text is other data: refused with both identities, unless --override train.
printf 'sphinx of black quartz, judge my vow; pack my box with five dozen liquor jugs\n' > "$tmp/c2.txt"
"$S" tokenize shard --vocab "$tmp/v.sxv" --out "$tmp/d.shard" "$tmp/c2.txt" 2>/dev/null || fail "rewrite the shard"
out=$("$S" train "${rel[@]}" --train "$tmp/d.shard" --steps 6 --override steps --out "$tmp/rel" --resume 2>&1) &&
    fail "resume on a rewritten shard accepted"
grep -qE -- "--train $tmp/d.shard is not the data the run trained on \([0-9]+ tokens, CRC-32 [0-9a-f]{8}; now [0-9]+ tokens, CRC-32 [0-9a-f]{8}\)" <<<"$out" ||
    fail "rewritten shard: $out"
"$S" train "${rel[@]}" --train "$tmp/d.shard" --steps 6 --override steps,train --out "$tmp/rel" --resume 2>/dev/null ||
    fail "--override train on a rewritten shard"

echo "resume.sh: $fails failed"
[ $fails -eq 0 ]
