#!/usr/bin/env bash
# The descriptor grammar is one table (src/model/config.c): `sextant inspect --options` lists it, and
# docs/MODEL.md quotes that listing verbatim; the unknown-option error names every option; inspect shows the
# MLA latent and MoE expert shapes. Each check pins the exact text.
set -u
S=${SEXTANT:-./sextant}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# The listing is the docs' table, line for line (regenerate the docs with `sextant inspect --options`).
listing=$("$S" inspect --options) || fail "inspect --options exited $?"
docs=$(sed -n '/^| option | meaning | default |$/,/^$/p' docs/MODEL.md | sed '/^$/d')
[ -n "$docs" ] || fail "docs/MODEL.md has no option table"
[ "$listing" = "$docs" ] || { fail "docs/MODEL.md's option table differs from inspect --options:"; diff <(echo "$docs") <(echo "$listing"); }
[ "$(wc -l <<<"$listing")" -eq 43 ] || fail "expected 41 options + 2 header lines, got $(wc -l <<<"$listing")"
grep -qxF '| `dc<N>` | MLA KV latent d_c | 4·hd |' <<<"$listing" || fail "listing lacks the dc<N> row"
grep -qxF '| `moe<E>k<K>` | MoE FFN: E experts, top-K routing | dense |' <<<"$listing" || fail "listing lacks the moe row"

# Every listed option parses (numbers filled in; MLA and MoE options with their switch).
for spelling in $(sed -n 's/^| `\([^`]*\)`.*/\1/p' <<<"$listing"); do
    opt=$(sed 's/<[A-Z]>/2/g' <<<"$spelling")
    case $opt in dcmha*) ;; dc*|rd*|nope*|nolatnorm) opt="mla-$opt" ;; bsign*) opt="bigram64-$opt" ;; ew*|shared*|sigmoid|aux*|balance=bias|brate*|balance=qb) opt="moe4k2-$opt" ;; esac
    case $opt in w2) opt=w64 ;; hd2) opt=hd16 ;; ropefrac2) opt=ropefrac0.5 ;; rope2) opt=rope500 ;; local2) opt=swa4-local2 ;; ve2) opt=ve1 ;; esac
    base=d2-w64-hd16; case $opt in w64|hd16) base=d2 ;; esac   # the base's own options, given once
    "$S" inspect "$base-$opt" >/dev/null 2>&1 || fail "listed option '$spelling' does not parse (as $base-$opt)"
done

# The unknown-option error lists the table's options, in its order.
want="model 'd2-foo': unknown option 'foo' (known: w<C> hd<D> kv<K> ff<F> v<N> relu2 swiglu gelu qknorm untied tied rope<B> ropefrac<F> softcap<S> fp8 bigram<R> bsign<S> smear gnorm<R> mla gate egate xsa ve<N> dcmha<W> swa<W> local<K> attcap<S> dc<N> dcq<N> rd<N> nope<N> nolatnorm moe<E>k<K> ew<N> shared<N> sigmoid aux<C> balance=bias brate<R> balance=qb)"
out=$("$S" inspect d2-foo 2>&1); rc=$?
[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "unknown option exited $rc"
grep -qF -- "$want" <<<"$out" || fail "unknown option said: $out"
out=$("$S" inspect d2-dc8 2>&1)
grep -qF "model 'd2-dc8': dc/dcq/rd/nope/nolatnorm need the 'mla' option" <<<"$out" || fail "MLA option without mla said: $out"
out=$("$S" inspect d2-sigmoid 2>&1)
grep -qF "model 'd2-sigmoid': ew/shared/sigmoid/aux/balance=bias/brate/balance=qb need moe<E>k<K>" <<<"$out" || fail "MoE option without moe said: $out"

# inspect shows the latent and the experts.
out=$("$S" inspect d2-w64-hd16-mla-dc24-dcq32-rd4-nope12)
grep -qxF "latent (MLA)     KV d_c 24, query d_c' 32, per head q·k rope 4 + nope 12, value 16; latent RMSNorm on; KV cache 28 floats per position and layer" <<<"$out" || fail "MLA inspect: $out"
out=$("$S" inspect d2-w64-hd16-mla-dc24-nolatnorm)
grep -qxF "latent (MLA)     KV d_c 24, query d_c' 0 (queries from h), per head q·k rope 8 + nope 8, value 16; latent RMSNorm off; KV cache 32 floats per position and layer" <<<"$out" || fail "MLA inspect: $out"
out=$("$S" inspect d2-w64-hd16-moe8k2-ew32-shared1-aux0.01-balance=bias)
grep -qxF "experts (MoE)    8 routed of width 32, top-2, 1 shared (width 32), softmax router; balancing: aux loss 0.01, selection bias (rate 0.001)" <<<"$out" || fail "MoE inspect: $out"
out=$("$S" inspect d2-w64-hd16-moe8k2-balance=qb)
grep -qxF "experts (MoE)    8 routed of width 256, top-2, 0 shared, softmax router; balancing: quantile balancing" <<<"$out" || fail "MoE QB inspect: $out"
out=$("$S" inspect d2-w64-hd16-moe4k1-sigmoid)
grep -qxF "experts (MoE)    4 routed of width 256, top-1, 0 shared, sigmoid router; balancing: none" <<<"$out" || fail "MoE inspect: $out"
"$S" inspect d2-w64-hd16 | grep -q "latent\|experts" && fail "dense GQA inspect shows latent or expert lines"

# A model far larger than this machine is described, not allocated; --model names it as other commands do.
out=$("$S" inspect --model d32-w4096 --seq 2048 2>&1) || fail "inspect of a 6.5B model exited $?: $out"
grep -qxF "params total     6476271616" <<<"$out" || fail "6.5B inspect: $out"
grep -qE '^memory +[0-9.]+ GiB .* at batch 8 x 2048' <<<"$out" || fail "6.5B inspect memory: $out"
out=$("$S" inspect d2-w16-hd8 --batch 4294967296 --seq 4294967296 2>&1) && fail "inspect of 2^64 tokens a batch passed"
grep -qF "a batch of 4294967296 sequences of 4294967296 tokens is more than a model holds" <<<"$out" || fail "oversize batch said: $out"
out=$("$S" inspect d0-w8 2>&1) && fail "d0 passed"
grep -qF "model 'd0-w8': 0 layers; a model has 1 to 1000" <<<"$out" || fail "d0 said: $out"
out=$("$S" inspect d6 --options 2>&1) && fail "a descriptor with --options passed"
grep -qF -- "--options lists the descriptor grammar: give it alone" <<<"$out" || fail "--options with a descriptor said: $out"

[ $fails -eq 0 ] && echo "options: all checks passed"
exit $fails
