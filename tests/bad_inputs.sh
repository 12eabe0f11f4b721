#!/usr/bin/env bash
# A table of corrupted and ill-fitting inputs, one per row: checkpoints, token shards, vocabulary files,
# ladder specs, schedule files, forecast/fit JSON, flags and model configurations. Each must give exactly one
# line on stderr naming the file (or flag) and what is wrong, exit 1 or 2, and never crash, hang (20 s
# limit) or allocate wildly (4 GiB address-space limit). Checksums of crafted files are fixed up with the
# CRC-32 in a gzip trailer, so that the check behind the checksum is the one exercised.
set -u
S=${SEXTANT:-./sextant}
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
crc_of() { dd if="$1" bs=1 skip="$2" count="$3" status=none | gzip -c | tail -c 8 | head -c 4; }  # file, off, len
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

# --- ladder specs (ladder plan) ---
spec() { printf "name t\ntrain synthetic:64\nmodel d1-hd16-w{width}\nwidths 32 64\n%s\n" "$2" > "$tmp/$1.ladder"; echo "$tmp/$1.ladder"; }
expect "seq.ladder:5: seq: expected a whole number in \[1, 16777216\], not .12x." ladder plan "$(spec seq 'seq 12x')"
expect "width.ladder:5: widths: widths must be at most 1e6" ladder plan "$(spec width 'widths 1e30')"
expect "big.ladder:5: batch: expected a whole number in \[1, 16777216\], not '1e300'" ladder plan "$(spec big 'batch 1e300')"
# Absurd sizes once passed `plan` (and batch 1e12 with min_steps searched every batch downward for hours).
expect "b12.ladder:5: batch: expected a whole number in \[1, 16777216\], not '1e12'" ladder plan "$(spec b12 'batch 1e12')"
expect "s12.ladder:5: seq: expected a whole number in \[1, 16777216\], not '1e12'" ladder plan "$(spec s12 'seq 1e12')"
expect "tpp.ladder:5: tokens_per_param: expected a number in \[1e-09, 1000000\], not '1e12'" ladder plan "$(spec tpp 'tokens_per_param 1e12')"
expect "seeds.ladder:5: seeds: expected a whole number in \[1, 1000\], not '1.5'" ladder plan "$(spec seeds 'seeds 1.5')"
expect "dup.ladder:5: widths: 48 appears twice" ladder plan "$(spec dup 'widths 16 24 32 48 48')"
expect "br.ladder:5: branches: expected FROM:LENGTH:SHAPE" ladder plan "$(spec br 'branches 0.9:0.5:linear')"
expect "key.ladder:5: colour: unknown key" ladder plan "$(spec key 'colour blue')"

# --- schedule files (train --schedule file:PATH) ---
printf '0 0\n0.5 abc\n1 0.1\n' > "$tmp/num.sched"
expect "num.sched:2: malformed multiplier 'abc'" "${tr[@]}" --schedule "file:$tmp/num.sched" --out "$tmp/o10"
printf '0 1\n0.5 1\n0.4 0.1\n' > "$tmp/order.sched"
expect "order.sched:3: position 0.4 does not increase" "${tr[@]}" --schedule "file:$tmp/order.sched" --out "$tmp/o11"
printf '# nothing\n' > "$tmp/none.sched"
expect "none.sched: no points" "${tr[@]}" --schedule "file:$tmp/none.sched" --out "$tmp/o12"

# --- forecast and fit JSON ---
printf '{"hero": {"steps": 3}, "points": [' > "$tmp/cut.json"
expect "cut.json:1: " "${tr[@]}" --forecast "$tmp/cut.json" --out "$tmp/o13"
printf '{"hero": {"steps": 3}, "points": [], "sha256": "00"}' > "$tmp/hash.json"
expect "hash.json: sha256 does not match its content" "${tr[@]}" --forecast "$tmp/hash.json" --out "$tmp/o14"
printf '{"ladder": {"fracs": [0.5]}, "per_fraction": [{}], "rungs": [{}]}' > "$tmp/fit.json"
expect "fit.json: the ladder needs a schedule" forecast --fit "$tmp/fit.json" --model d2 --tokens 1e6 --out "$tmp/fc.json"

# --- flags and impossible configurations ---
expect "--steps: 'abc' is not an integer" "${tr[@]}" --steps abc --out "$tmp/o15"
expect "--on-spike must be stop or rollback, not 'maybe'" "${tr[@]}" --on-spike maybe --out "$tmp/o16"
expect "--spike-threshold must be 0 (off) or a factor above 1" "${tr[@]}" --spike-threshold 0.5 --out "$tmp/o17"
expect "'0.5,2': '2' is not a fraction in (0, 1]" "${tr[@]}" --eval-at 0.5,2 --out "$tmp/o18"
expect "model 'd1000-w1000000': width 1000000 out of range" "${tr[@]}" --model d1000-w1000000 --out "$tmp/o19"
expect "s300.bin has [1-9][0-9]* tokens, fewer than one window of 100000001" "${tr[@]}" --seq 100000000 --out "$tmp/o20"
expect "size overflow" train "${common[@]}" --train synthetic:64 --batch 100000000 --seq 100000000 --out "$tmp/o21"
expect "cannot allocate 1448000000000 bytes for activations" train "${common[@]}" --train synthetic:64 --batch 4 --seq 100000000 --out "$tmp/o22"
expect "expected synthetic:V with 8 <= V <= 1048576" train "${common[@]}" --train synthetic:99999999999 --out "$tmp/o23"

echo "bad_inputs.sh: $rows corrupted or ill-fitting inputs, $fails failed"
[ $fails -eq 0 ]
