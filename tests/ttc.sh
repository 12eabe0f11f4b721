#!/usr/bin/env bash
# The test-time-compute pipeline end to end at smoke size: policy training, verifier training on the
# policy's labelled samples, every strategy, JSON and SVG outputs (the numbers are meaningless at this size).
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
SEXTANT=${SEXTANT:-./sextant} scripts/ttc-demo "$tmp/t" --smoke > "$tmp/log" 2>&1 || { cat "$tmp/log"; echo "ttc-demo --smoke failed"; exit 1; }
for f in ttc.json ttc_strategies.svg ttc_sizes.svg; do
    [ -s "$tmp/t/$f" ] || { echo "missing $f"; cat "$tmp/log"; exit 1; }
done
grep -q '"majority' "$tmp/t/ttc.json" || { echo "ttc.json lacks the voting strategy"; exit 1; }
echo "ttc.sh: ok"
