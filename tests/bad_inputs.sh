#!/usr/bin/env bash
# A table of corrupted and ill-fitting inputs, one per row, for every format sextant reads: checkpoints
# (container, metadata, weights), token shards, vocabulary files (sextant, tiktoken, GPT-2, gzipped), ladder
# specs, schedule files, run directories (config.json, metrics.jsonl), fit.json, forecast.json, flags and
# model configurations. Each must give exactly one line on stderr naming the file (or flag) and what is
# wrong, exit 1 or 2, and never crash, hang (20 s limit) or allocate wildly (4 GiB address-space limit).
# Checksums of crafted files are fixed up with the CRC-32 in a gzip trailer, so that the check behind the
# checksum is the one exercised. Rows added with issue 21 each failed (silent success, crash, hang or a
# message naming nothing) before its fix.
set -u
S=$(realpath "${SEXTANT:-./sextant}")   # absolute: a few rows run in another directory
# A 4 GiB address-space cap catches huge allocations; AddressSanitizer reserves terabytes of shadow memory
# up front, so under `make check` the cap is lifted and the allocator returns NULL instead of aborting.
vlimit=4194304
if ldd "$S" 2>/dev/null | grep -q libasan; then
    vlimit=unlimited
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0; rows=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
expect() {  # pattern, sextant args...
    local pat=$1; shift
    rows=$((rows+1))
    local out rc
    out=$( (ulimit -v $vlimit; timeout 20 "$S" "$@") 2>&1 >/dev/null); rc=$?
    out=$(printf '%s\n' "$out" | grep -v '^==[0-9]*==WARNING: AddressSanitizer failed to allocate')   # sanitizer noise
    if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then fail "'$*' exited $rc: $out"; return; fi
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "'$*' printed more than one line: $out"
    printf '%s\n' "$out" | grep -q -- "$pat" || fail "'$*' said: $out (expected /$pat/)"
}
le() {  # value, bytes: little-endian bytes of value
    local v=$1 n=$2 i s=""
    for ((i = 0; i < n; i++)); do s+=$(printf '\\x%02x' $(( (v >> (8 * i)) & 255 ))); done
    printf "$s"
}
poke() { dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }   # file, offset; bytes on stdin
crc_of() { tail -c +$(($2 + 1)) "$1" | head -c "$3" | gzip -1 -c | tail -c 8 | head -c 4; }  # file, off, len
size() { stat -c %s "$1"; }
variant() { cp "$1" "$tmp/$2"; echo "$tmp/$2"; }

# Valid inputs to corrupt: a checkpoint, a vocabulary and two shards.
common=(--model d1-w32-hd16 --batch 2 --seq 16 --steps 3 --threads 2 --quiet)
"$S" train "${common[@]}" --train synthetic:300 --out "$tmp/run" || { echo "FAIL: setup run"; exit 1; }
ck=$tmp/run/checkpoint.sxt
for i in $(seq 40); do echo "the quick brown fox $i jumps over the lazy dog; sphinx of black quartz $i"; done > "$tmp/text.txt"
"$S" tokenize train --vocab-size 300 --out "$tmp/v300.sxv" "$tmp/text.txt" 2>/dev/null || { echo "FAIL: setup vocab"; exit 1; }
"$S" tokenize train --vocab-size 280 --out "$tmp/v280.sxv" "$tmp/text.txt" 2>/dev/null
"$S" tokenize shard --vocab "$tmp/v300.sxv" --out "$tmp/s300.bin" "$tmp/text.txt" 2>/dev/null || { echo "FAIL: setup shard"; exit 1; }
"$S" tokenize shard --vocab "$tmp/v280.sxv" --out "$tmp/s280.bin" "$tmp/text.txt" 2>/dev/null
tr=(train "${common[@]}" --train "$tmp/s300.bin")

# --- checkpoints (train --resume) ---
resume() { mkdir -p "$tmp/r$1"; cp "$2" "$tmp/r$1/checkpoint.sxt"; echo "$tmp/r$1"; }
f=$(variant "$ck" magic.sxt); printf 'X' | poke "$f" 0
expect "checkpoint.sxt: not a sextant tensor file (wrong magic)" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 1 "$f")"
f=$(variant "$ck" ver.sxt); le 7 4 | poke "$f" 8
expect "checkpoint.sxt: format version 7, this build reads 1" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 2 "$f")"
f=$(variant "$ck" trunc.sxt); truncate -s 5000 "$f"
expect "checkpoint.sxt: truncated (end marker missing)" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 3 "$f")"
f=$(variant "$ck" flip.sxt); printf '\x55\x66' | poke "$f" 3000
expect "checkpoint.sxt: checksum mismatch (corrupt file)" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 4 "$f")"
f=$(variant "$ck" hlen.sxt); le 1000000000000 8 | poke "$f" 16
expect "checkpoint.sxt: header length is larger than the file" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 5 "$f")"
: > "$tmp/empty.sxt"
expect "checkpoint.sxt: too short to be a sextant tensor file" train "${common[@]}" --train synthetic:300 --resume --out "$(resume 6 "$tmp/empty.sxt")"
expect "checkpoint.sxt: checkpoint is for model d1-w32-hd16 (vocab 300), not d1-w32-hd16 (vocab 64)" \
    train "${common[@]}" --train synthetic:64 --resume --out "$(resume 7 "$ck")"
# Metadata behind a valid checksum (the file is what was written, but a hand edit or another tool wrote it):
# every field is checked before anything in the run directory changes.
meta() {  # name, from, to: a copy of the checkpoint with one header string replaced, checksum fixed
    local f; f=$(variant "$ck" "$1")
    FROM=$2 TO=$3 perl -0777 -pi -e 'my $d = length($ENV{TO}) - length($ENV{FROM});
        s/\Q$ENV{FROM}\E/$ENV{TO}/ or die "no $ENV{FROM}\n";   # the header keeps its length: loss_avg gives or takes digits
        if ($d > 0) { s/("loss_avg":\d+\.\d+?)\d{$d}(?=[,}])/$1/ or die "no room\n" }
        elsif ($d < 0) { my $z = "0" x -$d; s/("loss_avg":\d+\.\d+)(?=[,}])/$1$z/ or die "no loss_avg\n" }' "$f"
    local n; n=$(size "$f"); crc_of "$f" 0 $((n - 8)) | poke "$f" $((n - 8))
    resume "$1" "$f"
}
tc=(train "${common[@]}" --train synthetic:300 --resume)
expect "checkpoint field train.step is -5, not a whole number" "${tc[@]}" --out "$(meta m1 '"step":3,' '"step":-5,')"
expect 'checkpoint field train.step is "abc", not a whole number' "${tc[@]}" --out "$(meta m2 '"step":3,' '"step":"abc",')"
expect "checkpoint field train.step is 2.5, not a whole number" "${tc[@]}" --out "$(meta m3 '"step":3,' '"step":2.5,')"
expect "checkpoint field optimizer_steps is not a whole number >= 0" "${tc[@]}" --out "$(meta m4 '"optimizer_steps":3' '"optimizer_steps":-3')"
expect "the optimizer has taken 0 steps but the run 3" "${tc[@]}" --out "$(meta m5 '"optimizer_steps":3' '"optimizer_steps":0')"
expect "checkpoint field train.tokens_seen is -96.0, not a finite number >= 0" "${tc[@]}" --out "$(meta m6 '"tokens_seen":96.0' '"tokens_seen":-96.0')"
expect "checkpoint field train.loss_avg_n is 1.5, not a whole number" "${tc[@]}" --out "$(meta m7 '"loss_avg_n":3' '"loss_avg_n":1.5')"
expect "checkpoint field train.data (the data position) is missing" "${tc[@]}" --out "$(meta m8 '"data":{' '"dat_":{')"
expect "the data position (train.data.rng) is missing or malformed" "${tc[@]}" --out "$(meta m9 '"rng":["' '"rng":[1,"')"
expect "checkpoint is at step 9, beyond this run's 3 steps" "${tc[@]}" --out "$(meta m10 '"step":3,' '"step":9,')"
expect "checkpoint field train.flops_seen is missing" "${tc[@]}" --out "$(meta m11 '"flops_seen":' '"flops_sean":')"
"$S" train "${common[@]}" --train "$tmp/s300.bin" --out "$tmp/shardrun" || { echo "FAIL: setup shard run"; exit 1; }
expect "checkpoint.sxt: the checkpoint read its data as random windows, this run reads it as epochs" \
    train "${common[@]}" --train "$tmp/s300.bin" --data-order epoch --resume --out "$(resume 9 "$tmp/shardrun/checkpoint.sxt")"
# Header edits behind a fixed checksum: the container's own checks (core/tensorfile).
expect "checkpoint.sxt: tensor param.emb has unknown dtype 'f16'" "${tc[@]}" --out "$(meta h1 '"dtype":"f32","shape":[300,32]' '"dtype":"f16","shape":[300,32]')"
expect "checkpoint.sxt: tensor param.emb: size or offset inconsistent with its shape" "${tc[@]}" --out "$(meta h2 '"shape":[300,32]' '"shape":[301,32]')"
expect "checkpoint.sxt: tensor param.emb lies beyond the end of the file" "${tc[@]}" --out "$(meta h3 '"offset":0,' '"offset":99999936,')"
expect "checkpoint.sxt: tensor param.emb is missing" "${tc[@]}" --out "$(meta h4 '"name":"param.emb"' '"name":"param.emX"')"
expect "checkpoint.sxt: header has no tensor index" "${tc[@]}" --out "$(meta h5 '"tensors":[' '"tensorz":[')"
expect "checkpoint.sxt: holds weights only, no optimizer state" "${tc[@]}" --out "$(meta h6 '"has_optimizer":true' '"has_optimizer":false')"
expect "checkpoint.sxt: checkpoint metadata has no model descriptor" "${tc[@]}" --out "$(meta h7 '"descriptor":' '"descriptoR":')"
expect "checkpoint.sxt: optimizer state opt.adam_m.emb is missing" "${tc[@]}" --out "$(meta h8 '"name":"opt.adam_m.emb"' '"name":"opt.adam_m.emX"')"
# Non-finite weights behind a valid checksum: refused by sample, resume and --branch-from alike.
nanck() {  # name, float bytes: the checkpoint with its first weight replaced, checksum fixed
    local f; f=$(variant "$ck" "$1")
    local j; j=$(od -An -t u8 -j 16 -N 8 "$f" | tr -d ' ')
    printf "$2" | poke "$f" $(( (24 + j + 63) / 64 * 64 ))
    local n; n=$(size "$f"); crc_of "$f" 0 $((n - 8)) | poke "$f" $((n - 8))
    echo "$f"
}
f=$(nanck nan.sxt '\x00\x00\xc0\x7f')
expect "nan.sxt: tensor param.emb holds nan at index 0: the weights are unusable" sample --checkpoint "$f" --prompt 1 --ids
expect "checkpoint.sxt: tensor param.emb holds nan at index 0" "${tc[@]}" --out "$(resume 10 "$f")"
f=$(nanck inf.sxt '\x00\x00\x80\x7f')
expect "inf.sxt: tensor param.emb holds inf at index 0" train "${common[@]}" --train synthetic:300 --branch-from "$f" --out "$tmp/o30"
expect "missing.sxt: cannot open" sample --checkpoint "$tmp/missing.sxt" --prompt 1 --ids
expect "s300.bin: not a sextant tensor file (wrong magic)" sample --checkpoint "$tmp/s300.bin" --prompt 1 --ids
expect "checkpoint is for model d1-w32-hd16 (vocab 300), not d1-w64-hd16 (vocab 300)" \
    train "${common[@]}" --model d1-w64-hd16 --train synthetic:300 --branch-from "$ck" --out "$tmp/o31"
expect "already holds a run (checkpoint.sxt); pass --resume" train "${common[@]}" --train synthetic:300 --out "$tmp/run"

# --- token shards (train --train) ---
sh=$tmp/s300.bin
f=$(variant "$sh" magic.bin); printf 'Y' | poke "$f" 0
expect "magic.bin is not a sextant token shard (bad magic)" train "${common[@]}" --train "$f" --out "$tmp/o1"
f=$(variant "$sh" ver.bin); le 3 4 | poke "$f" 8; crc_of "$f" 0 52 | poke "$f" 52
expect "ver.bin: shard version 3, this build reads 1" train "${common[@]}" --train "$f" --out "$tmp/o2"
f=$(variant "$sh" hcrc.bin); le 5 4 | poke "$f" 20
expect "hcrc.bin: header checksum mismatch (corrupted shard)" train "${common[@]}" --train "$f" --out "$tmp/o3"
f=$(variant "$sh" huge.bin); le 1000000000000 8 | poke "$f" 32; crc_of "$f" 0 52 | poke "$f" 52
expect "huge.bin: truncated: header says 1000000000000 tokens (2000000000064 bytes) but the file has" train "${common[@]}" --train "$f" --out "$tmp/o4"
f=$(variant "$sh" absurd.bin); le 2000000000000 8 | poke "$f" 32; crc_of "$f" 0 52 | poke "$f" 52
expect "absurd.bin: implausible header (token bytes 2, vocab 300, 2000000000000 tokens)" train "${common[@]}" --train "$f" --out "$tmp/o5"
f=$(variant "$sh" trunc.bin); truncate -s $(( $(size "$sh") - 10 )) "$f"
expect "trunc.bin: truncated: header says" train "${common[@]}" --train "$f" --out "$tmp/o6"
f=$(variant "$sh" tcrc.bin); printf '\x01\x00' | poke "$f" 80
expect "tcrc.bin: token checksum mismatch (corrupted shard)" train "${common[@]}" --train "$f" --out "$tmp/o7"
f=$(variant "$sh" tok.bin); le 299 2 | poke "$f" 80; le 65535 2 | poke "$f" 82
crc_of "$f" 64 $(( $(size "$f") - 64 )) | poke "$f" 48; crc_of "$f" 0 52 | poke "$f" 52
expect "tok.bin: token id 65535 is outside the 300-token vocabulary" train "${common[@]}" --train "$f" --out "$tmp/o8"
expect "validation data $tmp/s280.bin has vocabulary 280, training data $tmp/s300.bin has 300" \
    train "${common[@]}" --train "$sh" --val "$tmp/s280.bin" --out "$tmp/o9"
expect "checkpoint.sxt: checkpoint is for model d1-w32-hd16 (vocab 300), not d1-w32-hd16 (vocab 280)" \
    train "${common[@]}" --train "$tmp/s280.bin" --resume --out "$(resume 8 "$ck")"
: > "$tmp/empty.bin"
expect "empty.bin" train "${common[@]}" --train "$tmp/empty.bin" --out "$tmp/o40"
head -c 30 "$sh" > "$tmp/short.bin"
expect "short.bin" train "${common[@]}" --train "$tmp/short.bin" --out "$tmp/o41"
f=$(variant "$sh" tb.bin); le 3 4 | poke "$f" 12; crc_of "$f" 0 52 | poke "$f" 52
expect "tb.bin: implausible header" train "${common[@]}" --train "$f" --out "$tmp/o42"
f=$(variant "$sh" v0.bin); le 0 4 | poke "$f" 16; crc_of "$f" 0 52 | poke "$f" 52
expect "v0.bin: implausible header" train "${common[@]}" --train "$f" --out "$tmp/o43"
expect "missing.bin" train "${common[@]}" --train "$tmp/missing.bin" --out "$tmp/o44"
f=$(variant "$sh" valmagic.bin); printf 'Z' | poke "$f" 0
expect "valmagic.bin is not a sextant token shard (bad magic)" train "${common[@]}" --train "$sh" --val "$f" --out "$tmp/o45"
expect "$tmp: " train "${common[@]}" --train "$tmp" --out "$tmp/o46"

# --- vocabulary files (tokenize encode --vocab) ---
v=$tmp/v300.sxv
f=$(variant "$v" trunc.sxv); truncate -s 900 "$f"
expect "trunc.sxv: checksum mismatch (truncated or corrupted vocabulary)" tokenize encode --vocab "$f" "$tmp/text.txt"
f=$(variant "$v" ver.sxv); le 9 4 | poke "$f" 8; n=$(size "$f"); crc_of "$f" 0 $((n - 4)) | poke "$f" $((n - 4))
expect "ver.sxv: vocabulary version 9, this build reads 1" tokenize encode --vocab "$f" "$tmp/text.txt"
f=$(variant "$v" nids.sxv); le 16000000 4 | poke "$f" 16; crc_of "$f" 0 $((n - 4)) | poke "$f" $((n - 4))
expect "nids.sxv: bad vocabulary header" tokenize encode --vocab "$f" "$tmp/text.txt"
printf 'not a vocabulary at all, just text\n' > "$tmp/text.sxv"
expect "text.sxv is not a sextant vocabulary (bad magic)" tokenize encode --vocab "$tmp/text.sxv" "$tmp/text.txt"
mkdir -p "$tmp/tk"; printf 'IQ== 0\nIg== one\n' > "$tmp/tk/r50k_base.tiktoken"
expect "r50k_base.tiktoken line 2: expected 'base64 rank'" tokenize encode --vocab "$tmp/tk/r50k_base.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/g2"; printf '{"a": 0, "b": "x"}' > "$tmp/g2/encoder.json"; : > "$tmp/g2/vocab.bpe"
expect "g2/encoder.json: bad entry" tokenize encode --vocab "$tmp/g2" "$tmp/text.txt"
# Decompression is checked as it goes: 4 MB of zeros in 4 KB of gzip once cost 4.1 GB before the magic check.
# (gzip members concatenate: 1100 copies of 4 MB of zeros is a 4.5 MB file that inflates to 4.4 GB).
head -c 4000000 /dev/zero | gzip -9 > "$tmp/z1.gz"
for i in $(seq 1100); do echo "$tmp/z1.gz"; done | xargs cat > "$tmp/zeros.sxv"
expect "zeros.sxv is not a sextant vocabulary (bad magic)" tokenize encode --vocab "$tmp/zeros.sxv" "$tmp/text.txt"
mkdir -p "$tmp/big"; head -c 1000000 /dev/zero | tr '\0' A | gzip -9 > "$tmp/a1.gz"
for i in $(seq 70); do echo "$tmp/a1.gz"; done | xargs cat > "$tmp/big/r50k_base.tiktoken"
expect "r50k_base.tiktoken: more than 64 MiB once decompressed" tokenize encode --vocab "$tmp/big/r50k_base.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/g0"; head -c 4000000 /dev/zero | gzip -9 > "$tmp/g0/encoder.json.gz"; : > "$tmp/g0/vocab.bpe"
expect "g0/encoder.json.gz: a NUL byte at offset 0: not a text vocabulary file" tokenize encode --vocab "$tmp/g0" "$tmp/text.txt"
: > "$tmp/e.sxv"
expect "e.sxv is not a sextant vocabulary (bad magic)" tokenize encode --vocab "$tmp/e.sxv" "$tmp/text.txt"
expect "s300.bin is not a sextant vocabulary (bad magic)" tokenize encode --vocab "$tmp/s300.bin" "$tmp/text.txt"
f=$(variant "$v" kind.sxv); printf '\x07' | poke "$f" $((24 + $(od -An -t u4 -j 20 -N 4 "$f" | tr -d ' '))); n=$(size "$f"); crc_of "$f" 0 $((n - 4)) | poke "$f" $((n - 4))
expect "kind.sxv: bad token 0" tokenize encode --vocab "$f" "$tmp/text.txt"
f=$(variant "$v" stray.sxv); n=$(size "$f"); head -c $((n - 4)) "$v" > "$f"; printf 'xyz' >> "$f"; crc_of "$f" 0 $((n - 1)) >> "$f"
expect "stray.sxv: 3 stray bytes after the tokens" tokenize encode --vocab "$f" "$tmp/text.txt"
expect "missing.sxv" tokenize encode --vocab "$tmp/missing.sxv" "$tmp/text.txt"
printf 'IQ== 0\n' > "$tmp/tk/foo.tiktoken"
expect "unknown tiktoken encoding 'foo'" tokenize encode --vocab "$tmp/tk/foo.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/tk2"; printf 'IQ== 0\n!!!! 1\n' > "$tmp/tk2/r50k_base.tiktoken"
expect "r50k_base.tiktoken line 2: expected 'base64 rank'" tokenize encode --vocab "$tmp/tk2/r50k_base.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/tk3"; printf 'IQ== 99999999999\n' > "$tmp/tk3/r50k_base.tiktoken"
expect "r50k_base.tiktoken line 1: expected 'base64 rank'" tokenize encode --vocab "$tmp/tk3/r50k_base.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/tk4"; printf 'IQ==\n' > "$tmp/tk4/cl100k_base.tiktoken"
expect "cl100k_base.tiktoken line 1: expected 'base64 rank'" tokenize encode --vocab "$tmp/tk4/cl100k_base.tiktoken" "$tmp/text.txt"
mkdir -p "$tmp/g3"; printf '[1, 2]' > "$tmp/g3/encoder.json"; : > "$tmp/g3/vocab.bpe"
expect "g3/encoder.json: not a JSON object" tokenize encode --vocab "$tmp/g3" "$tmp/text.txt"
mkdir -p "$tmp/g4"; printf '{"a": 0}' > "$tmp/g4/encoder.json"
expect "cannot find $tmp/g4/vocab.bpe" tokenize encode --vocab "$tmp/g4" "$tmp/text.txt"
mkdir -p "$tmp/g5"
expect "cannot find $tmp/g5/encoder.json" tokenize encode --vocab "$tmp/g5" "$tmp/text.txt"
expect "--vocab" tokenize shard --out "$tmp/x.bin" "$tmp/text.txt"

# --- ladder specs (ladder plan) ---
spec() { printf "name t\ntrain synthetic:64\nmodel d1-hd16-w{width}\nwidths 32 64\n%s\n" "$2" > "$tmp/$1.ladder"; echo "$tmp/$1.ladder"; }
expect "seq.ladder:5: seq: expected a whole number in \[1, 16777216\], not .12x." ladder plan "$(spec seq 'seq 12x')"
# A trailing comment is not part of the value (the blanks before it were kept once: "unknown schedule 'cosine   '").
printf 'name t\ntrain synthetic:64\nmodel d1-hd16-w{width}   # c\nwidths 32 64\nschedule cosine   # c\n' > "$tmp/tc.ladder"
"$S" ladder plan "$tmp/tc.ladder" 2>&1 | grep -q "FLOPs  cosine$" || fail "a ladder value with a trailing comment"
expect "width.ladder:5: widths: widths must be at most 1e6" ladder plan "$(spec width 'widths 1e30')"
expect "sweep.ladder:5: lr_sweep_widths: widths must be at most 1e6" ladder plan "$(spec sweep 'lr_sweep_widths 1e30 2')"
expect "big.ladder:5: batch: expected a whole number in \[1, 16777216\], not '1e300'" ladder plan "$(spec big 'batch 1e300')"
# Absurd sizes once passed `plan` (and batch 1e12 with min_steps searched every batch downward for hours).
expect "b12.ladder:5: batch: expected a whole number in \[1, 16777216\], not '1e12'" ladder plan "$(spec b12 'batch 1e12')"
expect "s12.ladder:5: seq: expected a whole number in \[1, 16777216\], not '1e12'" ladder plan "$(spec s12 'seq 1e12')"
expect "tpp.ladder:5: tokens_per_param: expected a number in \[1e-09, 1000000\], not '1e12'" ladder plan "$(spec tpp 'tokens_per_param 1e12')"
expect "seeds.ladder:5: seeds: expected a whole number in \[1, 1000\], not '1.5'" ladder plan "$(spec seeds 'seeds 1.5')"
expect "dup.ladder:5: widths: 48 appears twice" ladder plan "$(spec dup 'widths 16 24 32 48 48')"
expect "dupb.ladder:5: budgets: 1e+12 appears twice" ladder plan "$(spec dupb 'budgets 1e12 1e12')"
expect "dupe.ladder:5: eval_at: 0.5 appears twice" ladder plan "$(spec dupe 'eval_at 0.5,1,0.5')"
expect "dupbr.ladder:5: branches: 0.5:0.1:sqrt appears twice" ladder plan "$(spec dupbr 'branches 0.5:0.1:sqrt 0.6:0.1:sqrt 0.5:0.1:sqrt')"
expect "frac.ladder:5: widths: widths must be whole numbers" ladder plan "$(spec frac 'widths 32.5 64')"
expect "zero.ladder:5: widths: values must be positive" ladder plan "$(spec zero 'widths 0 64')"
expect "many.ladder:5: widths: expected 1 to 32 numbers" ladder plan "$(spec many "widths $(seq -s ' ' 16 16 560)")"
expect "ev.ladder:5: eval_at: fractions must lie in (0, 1\]" ladder plan "$(spec ev 'eval_at 0.5,1.5')"
expect "ev2.ladder:5: eval_at: expected fractions" ladder plan "$(spec ev2 'eval_at 0.5,x')"
expect "wu.ladder:5: warmup: expected a number in \[0, 1\], not '2'" ladder plan "$(spec wu 'warmup 2')"
expect "pw.ladder:5: lr_width_power: expected a number in \[-10, 10\], not '50'" ladder plan "$(spec pw 'lr_width_power 50')"
expect "lr.ladder:5: lr: expected a number in \[0, 1000\], not '-1'" ladder plan "$(spec lr 'lr -1')"
expect "nv.ladder:5: seeds needs a value" ladder plan "$(spec nv 'seeds')"
expect "long.ladder:5: name: too long" ladder plan "$(spec long "name $(printf 'x%.0s' $(seq 80))")"
expect "sch.ladder:[0-9]*: schedule: unknown schedule 'foo'" ladder plan "$(spec sch 'schedule foo')"
expect "schb.ladder:[0-9]*: schedule: unknown schedule 'foo'" ladder plan "$(spec schb "$(printf 'schedule foo\nbranches 0.5:0.2:linear')")"
# An unknown task fails `plan` with its line (it once failed every run of the ladder, at the trainer's start).
expect "tsk.ladder:[0-9]*: eval_tasks: unknown task 'nosuch'" ladder plan "$(spec tsk 'eval_tasks choice,nosuch')"
expect "tsm.ladder:[0-9]*: eval_tasks: 'cloze,arith': arith is for byte-level" ladder plan "$(spec tsm 'eval_tasks cloze,arith')"
expect "cos.ladder: cooldown branches need a wsd schedule, not 'cosine'" ladder plan "$(spec cos "$(printf 'schedule cosine\nbranches 0.5:0.2:linear')")"
printf 'name t\ntrain synthetic:64\nwidths 32\n' > "$tmp/nomodel.ladder"
expect "nomodel.ladder: 'model' must be a descriptor template containing {width}" ladder plan "$tmp/nomodel.ladder"
printf 'name t\ntrain synthetic:64\nmodel d1-hd16-w32\nwidths 32\n' > "$tmp/nowidth.ladder"
expect "nowidth.ladder: 'model' must be a descriptor template containing {width}" ladder plan "$tmp/nowidth.ladder"
printf 'name t\ntrain synthetic:64\nmodel d1-hd16-w{width}\n' > "$tmp/norungs.ladder"
expect "norungs.ladder: give the rungs with 'widths' or 'budgets'" ladder plan "$tmp/norungs.ladder"
printf 'name t\nmodel d1-hd16-w{width}\nwidths 32\n' > "$tmp/notrain.ladder"
expect "notrain.ladder: 'train' (a token shard) is required" ladder plan "$tmp/notrain.ladder"
expect "missing.ladder: cannot open" ladder plan "$tmp/missing.ladder"
expect "nofile.bin" ladder plan "$(spec nofile "train $tmp/nofile.bin")"
expect "br.ladder:5: branches: expected FROM:LENGTH:SHAPE" ladder plan "$(spec br 'branches 0.9:0.5:linear')"
expect "key.ladder:5: colour: unknown key" ladder plan "$(spec key 'colour blue')"

# --- schedule files (train --schedule file:PATH) ---
sched() {  # name, content, pattern
    printf "$2" > "$tmp/$1.sched"; expect "$3" "${tr[@]}" --schedule "file:$tmp/$1.sched" --out "$tmp/o-$1"
}
sched num '0 0\n0.5 abc\n1 0.1\n' "num.sched:2: malformed multiplier 'abc'"
sched order '0 1\n0.5 1\n0.4 0.1\n' "order.sched:3: position 0.4 does not increase"
sched none '# nothing\n' "none.sched: no points"
sched neg '0 1\n0.5 -1\n1 0.1\n' "neg.sched:2: multiplier -1 is negative"
sched unit '0 1\nunit steps\n1 0.1\n' "unit.sched:2: 'unit steps' or 'unit fraction' must come before"
sched three '0 1 2\n' "three.sched:1: expected 'POSITION MULTIPLIER'"
expect "cannot open schedule file '$tmp/missing.sched'" "${tr[@]}" --schedule "file:$tmp/missing.sched" --out "$tmp/o53"

# --- forecast and fit JSON ---
printf '{"hero": {"steps": 3}, "points": [' > "$tmp/cut.json"
expect "cut.json:1: " "${tr[@]}" --forecast "$tmp/cut.json" --out "$tmp/o13"
printf '{"hero": {"steps": 3}, "points": [], "sha256": "00"}' > "$tmp/hash.json"
expect "hash.json: sha256 does not match its content" "${tr[@]}" --forecast "$tmp/hash.json" --out "$tmp/o14"
printf '{"ladder": {"fracs": [0.5]}, "per_fraction": [{}], "rungs": [{}]}' > "$tmp/fit.json"
expect "fit.json: sha256 does not match its content" forecast --fit "$tmp/fit.json" --model d2 --tokens 1e6 --out "$tmp/fc.json"

# --- run directories (config.json, metrics.jsonl), fit.json and forecast.json of a real tiny ladder ---
# Three rungs of a second each; every corrupted copy is read by `fit`, `forecast --check` or `compare`.
printf 'name t\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 16 24\nseeds 2\ntokens_per_param 2\nseq 16\nbatch 4\nlr 2e-2\nlr_ref_width 16\nschedule wsd:decay=0.2\nwarmup 0.05\neval_batches 1\neval_at 0.25,0.5,0.75,1\n' > "$tmp/t.ladder"
"$S" ladder run "$tmp/t.ladder" --out "$tmp/L" --jobs 2 2>/dev/null || { echo "FAIL: setup ladder"; exit 1; }
"$S" fit "$tmp/t.ladder" --runs "$tmp/L" --out "$tmp/L/fit.json" >/dev/null 2>&1 || { echo "FAIL: setup fit"; exit 1; }
"$S" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --out "$tmp/L/fc.json" >/dev/null || { echo "FAIL: setup forecast"; exit 1; }
# The hero's flags out of range (before: taken as the defaults without a word, or --tokens winning silently).
expect "--tokens, --flops-ratio, --unique-tokens, --batch and --seq must not be negative" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --batch -1 --out "$tmp/fcx.json"
expect "--tokens and --flops-ratio both say how long the hero trains: give one" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --tokens 1e6 --out "$tmp/fcx.json"
expect "--warmup: give the hero's warmup as a fraction of its run in \[0, 1), not -0.5" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --warmup -0.5 --out "$tmp/fcx.json"
expect "--warmup-steps: give a number of steps, not -7" forecast --fit "$tmp/L/fit.json" --n-params 1e6 --warmup-steps -7 --out "$tmp/fcx.json"
expect "--n-params does not apply to $tmp/L/fit.json, the fit of a ladder spec (the hero: --model and --tokens or --flops-ratio)" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --n-params 1e6 --out "$tmp/fcx.json"
# Each kind of forecast and check refuses the flags of another (before: ignored), even at their default values.
expect "--report-out does not apply to $tmp/L/fit.json, the fit of a ladder spec" forecast --fit "$tmp/L/fit.json" --model d1-hd8-w32 --flops-ratio 2 --report-out "$tmp/r.json" --out "$tmp/fcx.json"
expect "--model does not apply to --check RUN (a run directory against --forecast) (it takes --check, --forecast, --report-out, --fit or --plot)" forecast --check "$tmp/L/w32-s1" --forecast "$tmp/fcx.json" --model d1-hd8-w32
expect "--out does not apply to --check RUN" forecast --check "$tmp/L/w32-s1" --forecast "$tmp/fcx.json" --out forecast.json
expect "--tokens does not apply to --check-run (a run of --ladder against --forecast)" forecast --ladder "$tmp/L" --check-run r1 --tokens 1e6
ladder_copy() {  # name: a copy of the ladder's runs (what `fit` reads) to corrupt; prints its directory
    local r
    for r in "$tmp"/L/w*/; do
        r=$(basename "$r"); mkdir -p "$tmp/$1/$r"; cp "$tmp/L/$r"/{config.json,metrics.jsonl,DONE} "$tmp/$1/$r/"
    done
    echo "$tmp/$1"
}
fitrow() {  # pattern, name, command on the copy's w16-s1 (run inside the copy's directory)
    local pat=$1 d; d=$(ladder_copy "L-$2"); (cd "$d/w16-s1" && eval "$3")
    expect "$pat" fit "$tmp/t.ladder" --runs "$d" --out "$d/fit2.json"
}
fitrow 'w16-s1/metrics.jsonl:3: "step" 1e+30 is not a whole number' m1 "sed -i '3s/\"step\":3,/\"step\":1e30,/' metrics.jsonl"
fitrow 'w16-s1/metrics.jsonl:3: "step" 2.5 is not a whole number' m2 "sed -i '3s/\"step\":3,/\"step\":2.5,/' metrics.jsonl"
fitrow 'w16-s1/metrics.jsonl:5: step 7 follows step 4' m3 "sed -i '5s/\"step\":5,/\"step\":7,/' metrics.jsonl"
fitrow 'w16-s1/metrics.jsonl:3: not a metrics record' m4 "sed -i '3s/.*/garbage/' metrics.jsonl"
fitrow 'w16-s1/metrics.jsonl:[0-9]*: "val_loss" -[0-9.]* at step [0-9]* is not a positive finite number' m5 "sed -i '0,/\"val_loss\":/s/\"val_loss\":/\"val_loss\":-/' metrics.jsonl"
fitrow 'w16-s1/metrics.jsonl' m6 "rm metrics.jsonl"
fitrow 'w16-s1/config.json (not a run directory?)' c1 "rm config.json"
fitrow 'w16-s1/config.json:[0-9]*: ' c2 "echo '{\"model\": ' > config.json"
fitrow 'w16-s1/config.json: missing string "model"' c3 "sed -i 's/\"model\"/\"modeL\"/' config.json"
fitrow 'w16-s1/config.json: missing integer "total_steps"' c4 "sed -i 's/\"total_steps\": \([0-9]*\)/\"total_steps\": \"\1\"/' config.json"
fitrow 'w16-s1/config.json: missing number "flops_per_token"' c5 "sed -i 's/\"flops_per_token\"/\"flops_per_tokeN\"/' config.json"
fitrow 'w16-s1/config.json: missing integer "n_params"' c6 "sed -i 's/\"n_params\": \([0-9]*\)/\"n_params\": 1.5/' config.json"
F=$tmp/L/fit.json FC=$tmp/L/fc.json
sed 's/"lr": /"lr": -/' "$F" > "$tmp/neglr.json"
expect "neglr.json: sha256 does not match its content" forecast --fit "$tmp/neglr.json" --model d1-hd8-w32 --tokens 1e5 --out "$tmp/o60.json"
sed 's/"sha256"/"sha257"/' "$F" > "$tmp/nohash.json"
expect "nohash.json: sha256 does not match its content" forecast --fit "$tmp/nohash.json" --model d1-hd8-w32 --tokens 1e5 --out "$tmp/o61.json"
printf '[1, 2]' > "$tmp/arr.json"
expect "arr.json: sha256 does not match" forecast --fit "$tmp/arr.json" --model d1-hd8-w32 --tokens 1e5 --out "$tmp/o62.json"
expect "missing.json" forecast --fit "$tmp/missing.json" --model d1-hd8-w32 --tokens 1e5 --out "$tmp/o63.json"
expect "model 'd1-hd8-wx'" forecast --fit "$F" --model d1-hd8-wx --tokens 1e5 --out "$tmp/o64.json"
expect "less than one batch" forecast --fit "$F" --model d1-hd8-w32 --tokens 10 --out "$tmp/o65.json"
expect "--model and --tokens (or --flops-ratio) are required" forecast --fit "$F" --out "$tmp/o66.json"
sed 's/"loss": \([0-9]\)/"loss": 9\1/' "$FC" > "$tmp/fct.json"
expect "fct.json: sha256 does not match its content" forecast --check "$tmp/L/w16-s1" --forecast "$tmp/fct.json"
expect "$tmp/nowhere/config.json (not a run directory?)" forecast --check "$tmp/nowhere" --forecast "$FC"
expect "fc.json: forecast is for a run of [0-9]* steps, this run has 3" "${tr[@]}" --forecast "$FC" --out "$tmp/o67"
d=$(ladder_copy L-fcm); sed -i '2s/"step":2,/"step":1e30,/' "$d/w16-s1/metrics.jsonl"
expect 'w16-s1/metrics.jsonl:2: "step" 1e+30 is not a whole number' forecast --check "$d/w16-s1" --forecast "$FC"
# seeds.json and until-decided.json, the records --until-decided keeps in a ladder's directory: edited copies
d=$(ladder_copy L-sj)
printf '{"format": "sextant-ladder-seeds", "version": 1, "ladder": "t", "rungs": [{"width": 24, "seeds": 3}], "crc32": 1}\n' > "$d/seeds.json"
expect "L-sj/seeds.json: checksum does not match its rungs (edited or corrupt)" fit "$tmp/t.ladder" --runs "$d" --out "$d/fit2.json"
printf '{"format": "sextant-ladder-seeds", "version": 9}\n' > "$d/seeds.json"
expect "L-sj/seeds.json: not a seeds file of version 1 to 2" fit "$tmp/t.ladder" --runs "$d" --out "$d/fit2.json"
mkdir -p "$tmp/cw/runs"; ln -s "$(ladder_copy L-ud)" "$tmp/cw/runs/t"; ln -s "$(ladder_copy L-ud2)" "$tmp/cw/runs/t2"
sed 's/^name t$/name t2/' "$tmp/t.ladder" > "$tmp/t2.ladder"
printf '{"format": "sextant-until-decided-looks", "version": 1, "ladders": ["t", "t2"], "looks": [], "verdicts": [], "crc32": 7}\n' > "$tmp/L-ud/until-decided.json"
# (compare --until-decided first says each ladder's runs are done: its last line is the error)
ud_row() {  # pattern
    local out rc
    rows=$((rows+1))
    out=$(cd "$tmp/cw" && timeout 20 "$S" compare "$tmp/t.ladder" "$tmp/t2.ladder" --until-decided --budget-flops 1 2>&1 >/dev/null); rc=$?
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || { fail "compare on an edited until-decided.json exited $rc: $out"; return; }
    printf '%s\n' "$out" | tail -1 | grep -q -- "$1" || fail "compare on an edited until-decided.json said: $out (expected /$1/)"
}
ud_row "runs/t/until-decided.json: checksum does not match (edited or corrupt): remove it"
printf '{"format": "sextant-until-decided-looks", "version": 3}\n' > "$tmp/L-ud/until-decided.json"
ud_row "runs/t/until-decided.json: not a record of version 1 to 2"

# --- flags and impossible configurations ---
expect "--steps: 'abc' is not an integer" "${tr[@]}" --steps abc --out "$tmp/o15"
expect "--on-spike must be stop or rollback, not 'maybe'" "${tr[@]}" --on-spike maybe --out "$tmp/o16"
expect "--spike-threshold must be 0 (off) or a factor above 1" "${tr[@]}" --spike-threshold 0.5 --out "$tmp/o17"
expect "'0.5,2': '2' is not a fraction in (0, 1]" "${tr[@]}" --eval-at 0.5,2 --out "$tmp/o18"
expect "model 'd1000-w1000000': width 1000000 out of range" "${tr[@]}" --model d1000-w1000000 --out "$tmp/o19"
expect "s300.bin has [1-9][0-9]* tokens, fewer than one window of 100000001" "${tr[@]}" --seq 100000000 --out "$tmp/o20"
expect "a batch of 100000000 sequences of 100000000 tokens is more than a model holds (at most 16777216 tokens per sequence and 268435456 per micro-batch)" train "${common[@]}" --train synthetic:64 --batch 100000000 --seq 100000000 --out "$tmp/o21"
expect "cannot allocate 242934087680 bytes for activations" train "${common[@]}" --train synthetic:64 --batch 4 --seq 16777216 --out "$tmp/o22"
expect "expected synthetic:V with 8 <= V <= 1048576" train "${common[@]}" --train synthetic:99999999999 --out "$tmp/o23"
expect "--batch, --seq, --grad-accum and --eval-batches must be positive" train "${common[@]}" --train synthetic:64 --batch 0 --out "$tmp/o70"
expect "--batch, --seq, --grad-accum and --eval-batches must be positive" train "${common[@]}" --train synthetic:64 --grad-accum -1 --out "$tmp/o71"
# negative counts that were taken as 0 (off, or the default) without a word
expect "--eval-every, --ckpt-every, --eval-task-items, --tokens, --unique-tokens and --peak-gflops must not be negative" train "${common[@]}" --train synthetic:64 --ckpt-every -1 --out "$tmp/o71b"
expect "--eval-every, --ckpt-every, --eval-task-items, --tokens, --unique-tokens and --peak-gflops must not be negative" train "${common[@]}" --train synthetic:64 --unique-tokens -5 --out "$tmp/o71c"
expect "--seq: 'abc' is not an integer" train "${common[@]}" --train synthetic:64 --seq abc --out "$tmp/o72"
expect "not a finite number" train "${common[@]}" --train synthetic:64 --lr inf --out "$tmp/o73"
expect "not a finite number" train "${common[@]}" --train synthetic:64 --lr nan --out "$tmp/o74"
expect "--steps: '1e99' is not an integer" train "${common[@]}" --train synthetic:64 --steps 1e99 --out "$tmp/o75"
expect "--override names flags a --resume may change: give it with --resume" train "${common[@]}" --train synthetic:64 --override steps --out "$tmp/o84"
expect "give --steps or --tokens, not both" train "${common[@]}" --train synthetic:64 --tokens 1000 --out "$tmp/o83"
expect "--dtype must be fp32 or bf16, not 'fp8'" train "${common[@]}" --train synthetic:64 --dtype fp8 --out "$tmp/o76"
expect "--data-order must be random or epoch, not 'sorted'" train "${common[@]}" --train synthetic:64 --data-order sorted --out "$tmp/o77"
expect "'0': '0' is not a fraction in (0, 1\]" train "${common[@]}" --train synthetic:64 --eval-at 0 --out "$tmp/o78"
expect "'2': '2' is not a fraction in (0, 1\]" train "${common[@]}" --train synthetic:64 --save-at 2 --out "$tmp/o79"
expect "warmup 'abc' is not a number" train "${common[@]}" --train synthetic:64 --warmup abc --out "$tmp/o80"
expect "unknown schedule 'foo'" train "${common[@]}" --train synthetic:64 --schedule foo --out "$tmp/o81"
expect "unknown optimizer 'sgd'" train "${common[@]}" --train synthetic:64 --optimizer sgd --out "$tmp/o82"
expect "--out: a run directory is required" train "${common[@]}" --train synthetic:64 --out ""
expect "unknown action 'bogus': sextant ladder run|status|plan SPEC" ladder bogus "$tmp/t.ladder"
expect "--jobs is a setting of \`ladder run\`, not of \`ladder status\`" ladder status "$tmp/t.ladder" --jobs 2
expect "--rung is a setting of \`ladder run\`, not of \`ladder plan\`" ladder plan "$tmp/t.ladder" --rung -1
expect "\`ladder plan\` only reads the spec" ladder plan "$tmp/t.ladder" --out "$tmp/L"
expect "--checkpoint is required" sample --prompt 1
expect "--n and --max-new must be at least 1" sample --checkpoint "$ck" --prompt 1 --n 0
expect "--top-p must be in (0, 1\], not 0" sample --checkpoint "$ck" --prompt 1 --ids --top-p 0
expect "--draft-k is a setting of --draft CKPT" sample --checkpoint "$ck" --prompt 1 --ids --draft-k 2
expect "--draft-k is a setting of --draft CKPT" sample --checkpoint "$ck" --prompt 1 --ids --draft-k 4
expect "--vocab turns text into ids: with --ids there is no text" sample --checkpoint "$ck" --prompt 1 --ids --vocab "$tmp/v.sxv"
expect "--context must be 1..16777216 positions (0: the run's seq), not 100000000000" export --context 100000000000 "$ck" "$tmp/x.safetensors"
expect "--context must be 1..16777216 positions (0: the run's seq), not -1" export --context -1 "$ck" "$tmp/x.safetensors"
expect "optimizer setting muon_lr = 0.05 is for muon; adamw does not use it" train "${common[@]}" --train synthetic:64 --muon-lr 0.05 --out "$tmp/o83"
expect "optimizer setting hyper_lr = 0.05 is for adamh and muonh; muon does not use it" train "${common[@]}" --train synthetic:64 --optimizer muon --hyper-lr 0.05 --out "$tmp/o84"
expect "--eval-task-items and --eval-tasks-val are settings of --eval-tasks (none given)" train "${common[@]}" --train synthetic:64 --eval-task-items 50 --out "$tmp/o85"
expect "--aux-end is when the --mtp and --prefix-aux weights reach 0: neither is on" train "${common[@]}" --train synthetic:64 --aux-end 0.5 --out "$tmp/o86"
expect "--prefix-vocab is the vocabulary of --prefix-aux's prefix map: --prefix-aux is 0" train "${common[@]}" --train synthetic:64 --prefix-vocab "$tmp/v.sxv" --out "$tmp/o87"
expect "--ctx must be at least 2 positions, not 1" sample --checkpoint "$ck" --prompt 1 --ids --ctx 1
expect "the prompt is 3 tokens, more than the context of 2 positions: raise --ctx" sample --checkpoint "$ck" --prompt 1,2,3 --ids --ctx 2
# A sample the context ends before --max-new is said so (and still printed).
out=$("$S" sample --checkpoint "$ck" --prompt 1,2 --ids --ctx 4 --max-new 5 --temperature 0 2>&1); rc=$?
[ $rc -eq 0 ] || fail "sample at a full context exited $rc: $out"
grep -qF "1 of 1 samples stopped short of --max-new 5: the context of 4 positions (prompt 2) is full; raise --ctx" <<<"$out" ||
    fail "sample at a full context said: $out"
expect "--prompt: '999' is not comma-separated token ids below 300" sample --checkpoint "$ck" --prompt 999 --ids
expect "give the ladder spec" fit
expect "unknown flag --bogus" fit --bogus 1

echo "bad_inputs.sh: $rows corrupted or ill-fitting inputs, $fails failed"
[ $fails -eq 0 ]
