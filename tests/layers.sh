#!/usr/bin/env bash
# The include layers point down: every `#include "dir/..."` in src/ names a folder of a lower layer than the
# including file's own folder (or the same folder). Layers, bottom up:
#   0 core
#   1 kernels data tok dist     (dist includes only core: message passing is a service like data)
#   2 model
#   3 optim                     (sees only model/params.h's parameter records)
#   4 train runs                (train drives model + optim; runs reads what training wrote and imported curves)
#   5 laws infer                (laws: the scaling-law maths and fits; infer: decoding; neither includes the other)
#   6 scale                     (orchestration: ladders and what reads them back: forecasts, comparisons)
#   7 report                    (documents: SVG charts, the HTML report; the TTC command draws with them too)
#   8 cli
# An upward include (model -> optim) or a sideways one (laws -> infer, same layer) fails the test and is
# listed; so does a folder that is not placed here (place a new folder in `rank` below).
# Include guards follow the folders too: src/<dir>/<name>.h is guarded by SEXTANT_<DIR>_<NAME>_H (so a header
# that moves folder gets its new guard, and two folders may hold headers of the same name).
# Usage: tests/layers.sh [SRC_DIR]   (default: src; with no argument it also checks that it catches a
# planted upward include). Part of the test suite, so the rule stays kept.
set -u
declare -A rank=([core]=0 [kernels]=1 [data]=1 [tok]=1 [dist]=1 [model]=2 [optim]=3 [train]=4 [runs]=4
                 [laws]=5 [infer]=5 [scale]=6 [report]=7 [cli]=8)

# Prints each bad include of the tree under $1 as "file: includes dir/x.h (why)"; returns 1 if any.
check_tree() {
    local root=$1 bad=0 f from to line
    while IFS= read -r line; do
        f=${line%%:*}
        to=$(sed 's/.*#include "\([^/"]*\)\/.*/\1/' <<<"$line")
        from=$(basename "$(dirname "$f")")
        if [ -z "${rank[$from]:-}" ]; then echo "$f: folder '$from' has no layer in tests/layers.sh"; bad=1; continue; fi
        if [ -z "${rank[$to]:-}" ]; then echo "$f: includes unknown folder '$to'"; bad=1; continue; fi
        [ "$from" = "$to" ] && continue
        if [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
            echo "$f: includes $to/ (upward: $from is layer ${rank[$from]}, $to is ${rank[$to]})"; bad=1
        elif [ "${rank[$to]}" -eq "${rank[$from]}" ]; then
            echo "$f: includes $to/ (sideways: both layer ${rank[$from]})"; bad=1
        fi
    done < <(grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^/"]*/' "$root"/*/*.[ch] 2>/dev/null |
             sed 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*/:#include /')
    return $bad
}

# Prints each header under $1 whose guard (its first #ifndef and the #define after it) is not
# SEXTANT_<DIR>_<NAME>_H; returns 1 if any.
check_guards() {
    local root=$1 bad=0 f want got def
    for f in "$root"/*/*.h; do
        want=$(basename "$(dirname "$f")")_$(basename "$f" .h)
        want=SEXTANT_${want^^}_H
        got=$(grep -m1 '^#ifndef' "$f" | awk '{print $2}')
        def=$(grep -m1 '^#define' "$f" | awk '{print $2}')
        if [ "$got" != "$want" ] || [ "$def" != "$want" ]; then
            echo "$f: include guard '${got:-none}', want $want"; bad=1
        fi
    done
    return $bad
}

if [ $# -gt 0 ]; then check_tree "$1" && check_guards "$1"; exit $?; fi

fails=0
check_tree src || { echo "FAIL: includes that do not point down (see the layer list in tests/layers.sh)"; fails=1; }
check_guards src || { echo "FAIL: include guards not named SEXTANT_<DIR>_<NAME>_H"; fails=1; }

# The check itself must be able to fail: a copy of src with one planted upward include (core -> cli) and one
# sideways include (infer -> laws).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r src "$tmp/src"
echo '#include "cli/commands.h"' >> "$tmp/src/core/status.c"
echo '#include "laws/fit.h"' >> "$tmp/src/infer/decode.c"
out=$(check_tree "$tmp/src")
grep -q "core/status.c: includes cli/ (upward" <<<"$out" || { echo "FAIL: planted upward include not caught: $out"; fails=1; }
grep -q "infer/decode.c: includes laws/ (sideways" <<<"$out" || { echo "FAIL: planted sideways include not caught: $out"; fails=1; }
[ "$(wc -l <<<"$out")" -ge 2 ] || fails=1
# ... and a header whose guard still names the folder it came from.
sed -i 's/SEXTANT_LAWS_FIT_H/SEXTANT_SCALE_FIT_H/' "$tmp/src/laws/fit.h"
out=$(check_guards "$tmp/src")
grep -q "laws/fit.h: include guard 'SEXTANT_SCALE_FIT_H', want SEXTANT_LAWS_FIT_H" <<<"$out" ||
    { echo "FAIL: planted wrong include guard not caught: $out"; fails=1; }

[ $fails -eq 0 ] && echo "layers: every include points down; every include guard names its folder"
exit $fails
