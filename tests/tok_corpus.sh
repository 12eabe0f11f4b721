#!/usr/bin/env bash
# End-to-end tokenizer check on the default corpus (fetched by scripts/fetch-data into data/ if missing):
# encode -> decode round-trips the whole corpus byte for byte with the GPT-2 vocabulary; an 8192-token BPE
# trains, saves, and round-trips the validation split; train/val shards are written and carry the
# documents of the MANIFEST; a run longer than its shard says so; the CLI rejects a bad vocabulary with a
# clear message.
set -euo pipefail
SEXTANT=${SEXTANT:-./sextant}
work=${SEXTANT_BUILD:-build}/tests/tok_corpus
mkdir -p "$work"
scripts/fetch-data data
fail() { echo "FAIL: $*" >&2; exit 1; }

cat data/corpus/train.txt data/corpus/val.txt > "$work/all.txt"
"$SEXTANT" tokenize encode --vocab data/vocab/gpt2 --out "$work/all.ids" "$work/all.txt"
"$SEXTANT" tokenize decode --vocab data/vocab/gpt2 --out "$work/all.back" "$work/all.ids"
cmp -s "$work/all.txt" "$work/all.back" || fail "GPT-2 encode/decode does not round-trip the corpus"

"$SEXTANT" tokenize train --vocab-size 8192 --out "$work/bpe.sxv" data/corpus/train.txt 2> "$work/train.log"
grep -q "7935 merges" "$work/train.log" || fail "8192-token training: $(cat "$work/train.log")"
"$SEXTANT" tokenize encode --vocab "$work/bpe.sxv" --out "$work/val.ids" data/corpus/val.txt
"$SEXTANT" tokenize decode --vocab "$work/bpe.sxv" --out "$work/val.back" "$work/val.ids"
cmp -s data/corpus/val.txt "$work/val.back" || fail "trained vocabulary does not round-trip the validation split"

for split in train val; do
    "$SEXTANT" tokenize shard --vocab "$work/bpe.sxv" --out "$work/$split.bin" data/corpus/$split.txt 2> "$work/$split.log"
    docs=$(grep -c "^$split	" data/corpus/MANIFEST)
    grep -q "wrote $work/$split.bin: $docs documents, .* (16-bit)" "$work/$split.log" ||
        fail "$split shard: expected $docs documents: $(cat "$work/$split.log")"
done

# A run that needs more tokens than its shard holds says so (and config.json records the passes).
head -c 3000 data/corpus/val.txt > "$work/tiny.txt"
"$SEXTANT" tokenize shard --vocab "$work/bpe.sxv" --out "$work/tiny.bin" "$work/tiny.txt" 2>/dev/null || fail "tiny shard"
rm -rf "$work/rep"   # a rerun of the suite reuses $work
"$SEXTANT" train --model d1-hd8-w16 --train "$work/tiny.bin" --batch 4 --seq 32 --steps 40 --out "$work/rep" --quiet \
    2> "$work/rep.log" || fail "training on the tiny shard: $(cat "$work/rep.log")"
grep -q "passes over $work/tiny.bin" "$work/rep.log" && grep -q '"data_passes"' "$work/rep/config.json" ||
    fail "repeated data not reported: $(cat "$work/rep.log")"

echo "not a vocabulary" > "$work/bad.sxv"
if "$SEXTANT" tokenize encode --vocab "$work/bad.sxv" /dev/null 2> "$work/bad.log"; then fail "bad vocabulary accepted"; fi
grep -q "bad magic" "$work/bad.log" || fail "bad vocabulary message: $(cat "$work/bad.log")"
# An empty corpus is refused; one too small for the size asked gives a smaller vocabulary, and says so.
: > "$work/empty.txt"
if "$SEXTANT" tokenize train --vocab-size 300 --out "$work/e.sxv" "$work/empty.txt" 2> "$work/e.log"; then fail "empty corpus accepted"; fi
grep -q "the corpus has no text to learn a vocabulary from" "$work/e.log" || fail "empty corpus message: $(cat "$work/e.log")"
rm -f "$work/e.shard"
if "$SEXTANT" tokenize shard --vocab "$work/bpe.sxv" --out "$work/e.shard" "$work/empty.txt" 2> "$work/e.log"; then fail "empty shard written"; fi
grep -q "empty.txt: no text to tokenize, so no shard written" "$work/e.log" && [ ! -e "$work/e.shard" ] ||
    fail "empty shard: $(cat "$work/e.log")"
"$SEXTANT" tokenize train --vocab-size 100000 --out "$work/t.sxv" "$work/tiny.txt" 2> "$work/t.log" || fail "tiny corpus"
grep -q "warning: the corpus gave only [0-9]* merges: the vocabulary has [0-9]* tokens, not the 100000 asked" "$work/t.log" ||
    fail "no word on a vocabulary smaller than asked: $(cat "$work/t.log")"
# decode of what is not token ids names the word, printably (before: the raw bytes, a newline included)
printf '12 7\xce\x8d\n9' > "$work/junk.txt"
if "$SEXTANT" tokenize decode --vocab "$work/bpe.sxv" "$work/junk.txt" > /dev/null 2> "$work/junk.log"; then fail "junk decoded"; fi
grep -q "not a token id: '7\\\\xce\\\\x8d' (id 2 of the input)" "$work/junk.log" || fail "junk message: $(cat "$work/junk.log")"
echo "tok_corpus: ok"
