#!/usr/bin/env bash
# train --init-from: another run's weights start a fresh run (a curriculum's next stage). At learning rate 0
# the run ends on exactly the source's weights; config.json records the source's path and sha256; sources of
# other shapes are refused naming the first differing tensor, with no run written; a run started this way and
# stopped resumes to the bytes of the straight run (without the source, which a resume does not read).
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
c=(--train synthetic:64 --batch 2 --seq 16 --threads 1 --quiet)
exec 3>&2 2>/dev/null   # the trainers' summary lines
"$S" train "${c[@]}" --model d1-w32-hd16 --steps 6 --out "$tmp/src" || fail "source run"
"$S" train "${c[@]}" --model d2-w32-hd16 --steps 2 --out "$tmp/deep" || fail "deeper source run"
src=$tmp/src/checkpoint.sxt

# The weights after the start are the source's: one step at learning rate 0 changes nothing.
"$S" train "${c[@]}" --model d1-w32-hd16 --steps 1 --lr 0 --init-from "$src" --out "$tmp/lr0" || fail "--init-from run"
for r in src lr0; do "$S" export --config "$tmp/$r.json" "$tmp/$r/checkpoint.sxt" "$tmp/$r.st" >/dev/null || fail "export $r"; done
cmp -s "$tmp/src.st" "$tmp/lr0.st" || fail "the weights after --init-from differ from the source's"
# ... while a fresh run from the seed does not start there (the comparison can fail).
"$S" train "${c[@]}" --model d1-w32-hd16 --steps 1 --lr 0 --out "$tmp/fresh" || fail "fresh run"
"$S" export --config "$tmp/fresh.json" "$tmp/fresh/checkpoint.sxt" "$tmp/fresh.st" >/dev/null
cmp -s "$tmp/src.st" "$tmp/fresh.st" && fail "a fresh run has the source's weights: the comparison proves nothing"
want=$(sha256sum "$src" | cut -d' ' -f1)
grep -q "\"sha256\": \"$want\"" "$tmp/lr0/config.json" || fail "config.json lacks the source's sha256 $want"
grep -q "\"path\": \"$src\"" "$tmp/lr0/config.json" || fail "config.json lacks the source's path"
[ "$(cut -d, -f1 "$tmp/lr0/metrics.jsonl")" = '{"step":1' ] || fail "the run did not start at step 0: $(cat "$tmp/lr0/metrics.jsonl")"

# Other shapes: refused, the first differing tensor named, nothing trained.
expect() {   # expect MESSAGE MODEL SOURCE
    out=$("$S" train "${c[@]}" --model $2 --steps 1 --init-from "$3" --out "$tmp/bad" 2>&1) && fail "$2 from $3 accepted"
    echo "$out" | grep -qF -- "$1" || fail "$2 from $3: message: $out"
    [ -f "$tmp/bad/checkpoint.sxt" ] && fail "$2 from $3: a refused start wrote a checkpoint"
    rm -rf "$tmp/bad"
}
expect "tensor param.emb is [64, 32] there but [64, 48] in model d1-w48-hd16" d1-w48-hd16 "$src"
expect "has no tensor param.l1.attn_norm, which model d2-w32-hd16 needs" d2-w32-hd16 "$src"
expect "holds tensor param.l1.attn_norm, which model d1-w32-hd16 does not have" d1-w32-hd16 "$tmp/deep/checkpoint.sxt"
expect "--init-from and --branch-from" "d1-w32-hd16 --branch-from $src" "$src"

# Stopped after its step-4 checkpoint and resumed (the source gone), the run ends on the straight run's bytes.
r=(--model d1-w32-hd16 --steps 8 --ckpt-every 4 --init-from "$tmp/moved.sxt")
cp "$src" "$tmp/moved.sxt"
"$S" train "${c[@]}" "${r[@]}" --out "$tmp/straight" || fail "straight run"
SEXTANT_INJECT_NAN_AT_STEP=6 "$S" train "${c[@]}" "${r[@]}" --out "$tmp/cut" 2>/dev/null && fail "NaN run should stop"
rm "$tmp/moved.sxt"
"$S" train "${c[@]}" "${r[@]}" --out "$tmp/cut" --resume || fail "resume without the source"
cmp -s "$tmp/straight/checkpoint.sxt" "$tmp/cut/checkpoint.sxt" || fail "the resumed run differs from the straight one"
grep -q "\"sha256\": \"$want\"" "$tmp/cut/config.json" || fail "the resume lost config.json's record of the source"

exec 2>&3
[ $fails -eq 0 ] && echo "init_from.sh: ok"
exit $((fails > 0))
