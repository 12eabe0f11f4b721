#!/usr/bin/env bash
# End-to-end checks of `sextant train` on synthetic tokens: the loss falls, two runs with the same seed are
# bit-identical, train k + resume equals training straight through (byte-identical checkpoints), and bad
# input gets a clear message with a non-zero exit, never a crash.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
common=(--model d1-w32-hd16 --train synthetic:64 --batch 4 --seq 32 --steps 60 --lr 1e-2 --eval-every 20
        --eval-batches 2 --threads 2 --quiet --schedule wsd:decay=0.3 --warmup 5)

"$S" train "${common[@]}" --out "$tmp/a" || fail "training run a failed"
"$S" train "${common[@]}" --out "$tmp/b" || fail "training run b failed"
cmp -s "$tmp/a/checkpoint.sxt" "$tmp/b/checkpoint.sxt" || fail "same seed gave different parameters"

# The loss falls: the last validation loss is well below the first training loss (ln 64 = 4.16).
first=$(head -1 "$tmp/a/metrics.jsonl" | sed 's/.*"train_loss":\([0-9.e+-]*\).*/\1/')
last=$(grep val_loss "$tmp/a/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 1.0) }' || fail "loss did not fall ($first -> $last)"
[ "$(wc -l < "$tmp/a/metrics.jsonl")" -eq 60 ] || fail "metrics.jsonl should have 60 lines"
[ -f "$tmp/a/DONE" ] && [ -f "$tmp/a/config.json" ] || fail "run directory incomplete"

# bf16 matmul operands (fp32 accumulation and master weights) follow the fp32 curve: final validation loss
# within 2% (bf16 keeps 8 bits of mantissa: per-product error 2^-9, averaging out over the run).
"$S" train "${common[@]}" --dtype bf16 --out "$tmp/bf" || fail "bf16 run failed"
bf=$(grep val_loss "$tmp/bf/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
awk -v a="$last" -v b="$bf" 'BEGIN { d = (a - b) / a; exit !(d < 0.02 && d > -0.02) }' || fail "bf16 final loss $bf vs fp32 $last"
cmp -s "$tmp/a/checkpoint.sxt" "$tmp/bf/checkpoint.sxt" && fail "--dtype bf16 changed nothing"

# Killed (-9) right after its step-25 checkpoint, then resumed to step 60.
"$S" train "${common[@]}" --ckpt-every 25 --out "$tmp/c" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1200); do [ -f "$tmp/c/checkpoint.sxt" ] && break; sleep 0.05; done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
"$S" train "${common[@]}" --out "$tmp/c" --resume || fail "resume failed"
cmp -s "$tmp/a/checkpoint.sxt" "$tmp/c/checkpoint.sxt" || fail "kill + resume differs from the uninterrupted run"
[ "$(wc -l < "$tmp/c/metrics.jsonl")" -eq 60 ] || fail "resumed metrics.jsonl should have exactly 60 lines"

# Bad input: one-line message naming the problem, exit code 1 or 2, never a signal.
expect_error() {  # pattern, args...
    local pat=$1; shift
    out=$("$S" "$@" 2>&1); rc=$?
    if [ $rc -eq 0 ] || [ $rc -gt 2 ]; then fail "'$*' exited $rc"; return; fi
    echo "$out" | grep -q -- "$pat" || fail "'$*' said: $out (expected /$pat/)"
}
expect_error "unknown option 'foo'" train --model d2-foo --train synthetic:64 --steps 2 --out "$tmp/e1"
expect_error "does not divide" train --model d2-w40-hd16 --train synthetic:64 --steps 2 --out "$tmp/e2"
expect_error "KV heads do not divide" train --model d2-kv3 --train synthetic:64 --steps 2 --out "$tmp/e3"
expect_error "unknown flag --nope" train --nope 1
expect_error "not a finite number" train --lr abc --train synthetic:64
expect_error "already holds a run" train "${common[@]}" --out "$tmp/a"
expect_error "is not finite" train --model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 5 --lr 1e30 --clip 0 --out "$tmp/e4" --quiet
mkdir -p "$tmp/trunc"; head -c 1000 "$tmp/a/checkpoint.sxt" > "$tmp/trunc/checkpoint.sxt"
expect_error "truncated" train "${common[@]}" --out "$tmp/trunc" --resume
mkdir -p "$tmp/other"; cp "$tmp/a/checkpoint.sxt" "$tmp/other/"
expect_error "checkpoint is for model d1-w32-hd16" train --model d1-w64-hd16 --train synthetic:64 --batch 4 --seq 32 --steps 60 --out "$tmp/other" --resume --quiet

# More threads than cores: the run goes ahead, with a note that it will be slower.
over=$(( $(nproc) + 1 ))
out=$("$S" train --model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 2 --threads $over --quiet \
      --out "$tmp/over" 2>&1) || fail "--threads $over failed: $out"
echo "$out" | grep -q -- "--threads $over is more than the $(nproc) cores" || fail "no note for --threads $over: $out"

# A run that cannot be marked finished (DONE) fails: a ladder would train it again, fit take it as unfinished.
mkdir -p "$tmp/nodone/DONE"
out=$("$S" train --model d1-w16-hd8 --train synthetic:32 --batch 2 --seq 8 --steps 3 --threads 1 --quiet \
      --out "$tmp/nodone" 2>&1) && fail "a run without its DONE marker exited 0"
grep -qF "$tmp/nodone/DONE: cannot mark the run finished (Is a directory)" <<<"$out" || fail "no DONE marker said: $out"

echo "train.sh: $fails failed"
[ $fails -eq 0 ]
