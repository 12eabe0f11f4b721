#!/usr/bin/env bash
# Downstream tasks end to end (infer/tasks.h, docs/TASKS.md) on a small generated corpus: `train
# --eval-tasks` logs task_<name>_acc/_loss/_n at exactly the evaluation steps; measuring tasks changes
# nothing the run trains (same checkpoint bytes as without); a run stopped and resumed logs the same task
# numbers as the straight run; `sextant eval` on the final checkpoint gives the same accuracy and loss as
# the run's last evaluation (same items: same seed and count) and its JSON; the eval CLI's errors (unknown
# task, missing shard, no vocabulary beside the shard, a model of another vocabulary, no --task, a mixture
# without --eval-tasks-val); --eval-tasks-val builds the tasks from another shard; a ladder's eval_tasks
# reaches every run.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# 30 documents of random sentences over 40 words (words recur within a passage, as the cloze needs); 24 train,
# 6 held out.
awk -v dir="$tmp" 'BEGIN { srand(3); n = split("the cat dog sat on mat and ran house garden river stone water " \
    "bright morning quietly over a king queen ship sea wind storm night light old young city road north south " \
    "green blue fire bread table window door", w, " ")
  for (d = 0; d < 30; d++) {
    f = dir "/" (d < 24 ? "train" : "val") ".txt"
    for (s = 0; s < 50; s++) { k = 4 + int(rand() * 6); line = ""
      for (i = 0; i < k; i++) line = line (i ? " " : "") w[1 + int(rand() * n)]
      printf "%s. ", line > f }
    printf "\n<|endoftext|>\n" > f } }'
mkdir -p "$tmp/d"
"$S" tokenize train --vocab-size 320 --out "$tmp/d/vocab.sxv" "$tmp/train.txt" 2>/dev/null || fail "tokenize train"
for split in train val; do
    "$S" tokenize shard --vocab "$tmp/d/vocab.sxv" --out "$tmp/d/$split.shard" "$tmp/$split.txt" 2>/dev/null || fail "shard $split"
done

run=(--model d1-w32-hd16 --train "$tmp/d/train.shard" --val "$tmp/d/val.shard" --batch 4 --seq 64 --steps 8
     --eval-at 0.5,1 --eval-batches 1 --threads 1 --quiet --ckpt-every 4)
tasks=(--eval-tasks cloze,choice --eval-task-items 20)
"$S" train "${run[@]}" "${tasks[@]}" --out "$tmp/t" 2>/dev/null || fail "train --eval-tasks"
"$S" train "${run[@]}" --out "$tmp/plain" 2>/dev/null || fail "train without tasks"

# The fields at the evaluation steps (4 and 8) and nowhere else.
fields() { grep -o '"task_[a-z]*_[a-z]*":[^,}]*' "$1" | tr '\n' ' '; }
[ "$(grep -c '"task_cloze_acc"' "$tmp/t/metrics.jsonl")" -eq 2 ] || fail "task fields on other lines than the 2 evaluations"
for step in 4 8; do
    line=$(grep "\"step\":$step," "$tmp/t/metrics.jsonl")
    for f in task_cloze_acc task_cloze_loss task_cloze_n task_choice_acc task_choice_loss task_choice_n; do
        grep -q "\"$f\":" <<<"$line" || fail "step $step: no $f in $line"
    done
    grep -q '"task_cloze_n":20,' <<<"$line" || fail "step $step: task_cloze_n is not 20"
done
cmp -s "$tmp/t/checkpoint.sxt" "$tmp/plain/checkpoint.sxt" || fail "measuring tasks changed the training"

# Stopped at step 6 (after the checkpoint at 4), resumed: the same task numbers as the straight run.
SEXTANT_INJECT_NAN_AT_STEP=6 "$S" train "${run[@]}" "${tasks[@]}" --out "$tmp/r" 2>/dev/null && fail "NaN run should stop"
"$S" train "${run[@]}" "${tasks[@]}" --out "$tmp/r" --resume 2>/dev/null || fail "resume with --eval-tasks"
[ "$(fields "$tmp/r/metrics.jsonl")" = "$(fields "$tmp/t/metrics.jsonl")" ] ||
    fail "resumed task numbers differ: $(fields "$tmp/r/metrics.jsonl") vs $(fields "$tmp/t/metrics.jsonl")"
cmp -s "$tmp/t/checkpoint.sxt" "$tmp/r/checkpoint.sxt" || fail "the resumed run's checkpoint differs"

# `sextant eval` on the final checkpoint: the validation shard from config.json, the run's items (seed 1).
out=$("$S" eval --task cloze,choice --n 20 "$tmp/t/checkpoint.sxt" 2>&1) || fail "eval: $out"
last=$(tail -n 1 "$tmp/t/metrics.jsonl")
for task in cloze choice; do
    acc=$(sed "s/.*\"task_${task}_acc\":\([^,}]*\).*/\1/" <<<"$last")
    loss=$(sed "s/.*\"task_${task}_loss\":\([^,}]*\).*/\1/" <<<"$last")
    got=$(grep "^$task " <<<"$out")
    want=$(awk -v a="$acc" -v l="$loss" 'BEGIN { printf "acc %.4f .* loss %.4f ", a, l }')
    grep -q "$want" <<<"$got" || fail "eval $task: '$got' does not show the run's last evaluation ($want)"
done
grep -q "^choice     acc [0-9.]* \[[0-9.]*, [0-9.]*\] ([0-9]*/20, 95% Wilson; chance 0.25) | loss [0-9.]* nats per token$" <<<"$out" ||
    fail "eval output: $out"
json=$("$S" eval --task choice --n 20 --seed 2 --json "$tmp/t/checkpoint.sxt" 2>&1)
grep -q '^{"task":"choice","n":20,"correct":[0-9]*,"acc":[0-9.e-]*,"acc_lo":.*"chance":0.25,"seed":2,' <<<"$json" ||
    fail "eval --json: $json"

# Errors: each names what is wrong.
expect() {   # expect CODE MESSAGE CMD...
    local code=$1 msg=$2; shift 2
    local o; o=$("$@" 2>&1); local rc=$?
    [ $rc -eq "$code" ] && grep -qF -- "$msg" <<<"$o" || fail "$* -> exit $rc, '$o' (wanted $code, '$msg')"
}
ck="$tmp/t/checkpoint.sxt"
expect 2 "unknown task 'nope' (tasks: cloze, choice, choice_pmi, arith)" "$S" eval --task cloze,nope "$ck"
expect 1 "$tmp/missing.shard" "$S" eval --task cloze --val "$tmp/missing.shard" "$ck"
expect 2 "--task is required" "$S" eval "$ck"
expect 2 "'choice,cloze,choice': task choice is named twice" "$S" eval --task choice,cloze,choice "$ck"
expect 2 "--n is a setting of --task" "$S" eval --val-loss --n 7 "$ck"
expect 2 "--seed is a setting of --task" "$S" eval --val-loss --seed 1 "$ck"
expect 2 "--seq is a setting of --val-loss" "$S" eval --task cloze --seq 64 "$ck"
expect 2 "--batches is a setting of --val-loss" "$S" eval --task cloze --batches 16 "$ck"
# Windows reading more than the shard holds overlap: said (before: a loss "on 64 batches" of a small shard, silently).
out=$("$S" eval --val-loss --batches 64 --batch 8 --seq 64 "$ck" 2>&1 >/dev/null) || fail "eval --val-loss of many windows: $out"
grep -q "sextant eval: note: 64 x 8 windows of 65 tokens read 33280 tokens, more than the [0-9]* of .*val.shard: they overlap" <<<"$out" ||
    fail "overlapping windows not said: $out"
out=$("$S" eval --val-loss --batches 2 --batch 2 --seq 16 "$ck" 2>&1 >/dev/null); [ -z "$out" ] || fail "a note for windows that fit: $out"
# --json covers --val-loss too: one object with the loss and the windows it was taken on.
json=$("$S" eval --val-loss --batches 2 --batch 2 --seq 16 --json "$ck" 2>&1) || fail "eval --val-loss --json: $json"
python3 -c 'import json, sys; o = json.loads(sys.argv[1]); assert o["val_loss"] > 0 and (o["batches"], o["batch"], o["seq"]) == (2, 2, 16), o' "$json" 2>/dev/null ||
    fail "eval --val-loss --json printed: $json"
mkdir -p "$tmp/bare" && cp "$tmp/d/val.shard" "$tmp/bare/"
expect 2 "no vocabulary (.sxv) beside it" "$S" eval --task cloze --val "$tmp/bare/val.shard" "$ck"
expect 1 "arith needs a byte-level model" "$S" eval --task arith "$ck"
expect 2 "unknown task 'bogus'" "$S" train "${run[@]}" --eval-tasks bogus --out "$tmp/bad"
[ ! -e "$tmp/bad/metrics.jsonl" ] || fail "a run with an unknown task trained"
expect 2 "not the mixture $tmp/x.mix: give --eval-tasks-val" "$S" train "${run[@]}" --val "$tmp/x.mix" --eval-tasks cloze --out "$tmp/bad"
expect 1 "$tmp/none.shard" "$S" train "${run[@]}" --eval-tasks cloze --eval-tasks-val "$tmp/none.shard" --out "$tmp/bad"

# --eval-tasks-val: the tasks come from that shard (here the training shard), the losses from --val.
"$S" train "${run[@]}" "${tasks[@]}" --eval-tasks-val "$tmp/d/train.shard" --out "$tmp/tv" 2>/dev/null || fail "--eval-tasks-val"
a=$(tail -n 1 "$tmp/t/metrics.jsonl"); b=$(tail -n 1 "$tmp/tv/metrics.jsonl")
[ "$(grep -o '"val_loss":[^,]*' <<<"$a")" = "$(grep -o '"val_loss":[^,]*' <<<"$b")" ] || fail "--eval-tasks-val changed val_loss"
[ "$(grep -o '"task_cloze_loss":[^,]*' <<<"$a")" != "$(grep -o '"task_cloze_loss":[^,]*' <<<"$b")" ] ||
    fail "--eval-tasks-val: the same task items as --val"

# A ladder's eval_tasks and eval_task_items reach every run.
printf 'name lt\ntrain %s\nval %s\nmodel d1-hd16-w{width}\nwidths 16 32\nseeds 1\ntokens_per_param 2\nseq 32\nbatch 4\neval_batches 1\neval_at 0.5,1\neval_tasks choice\neval_task_items 12\n' \
    "$tmp/d/train.shard" "$tmp/d/val.shard" > "$tmp/lt.ladder"
(cd "$tmp" && "$S" ladder run lt.ladder --jobs 1 >/dev/null 2>&1) || fail "ladder with eval_tasks"
for r in w16-s1 w32-s1; do
    [ "$(grep -c '"task_choice_n":12' "$tmp/runs/lt/$r/metrics.jsonl" 2>/dev/null)" = 2 ] || fail "ladder run $r: no task fields"
done

[ $fails -eq 0 ] && echo "tasks: all checks passed"
exit $fails
