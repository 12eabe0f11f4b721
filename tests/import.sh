#!/usr/bin/env bash
# sextant import: a small ladder as a runs table + curves table (CSV), the same as JSONL, and metadata
# carried in the curves table alone all give byte-identical ladder directories; a ladder directory read back
# and written again is identical (round trip); a sparse spreadsheet export (byte order mark, CRLF, rows
# without an evaluation, a step-0 evaluation) gives the same ladder; every refusal names file, row and column and leaves nothing
# behind; an edited ladder directory is refused by its checksum.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

cat > "$tmp/runs.csv" <<'EOF'
name,size,N,N_noemb,tps,steps,plr,warm,sched,seed
a-1k,s,1000000,800000,4096,100,0.004,10,cosine:min=0.1,1
"b,2k",m,2000000,1700000,4096,100,0.003,10,cosine:min=0.1,1
EOF
{ echo "name,step,tok,val_c4,val_wiki"
  for s in 20 40 60 80 100; do
      echo "a-1k,$s,$((s*4096)),$(echo "3 + 10/$s" | bc -l),$(echo "3.2 + 10/$s" | bc -l)"
      echo "\"b,2k\",$s,$((s*4096)),$(echo "2.9 + 10/$s" | bc -l),$(echo "3.1 + 10/$s" | bc -l)"
  done; } > "$tmp/curves.csv"
MAP=(--run-id-col name --group-col size --n-params-col N --n-params-nonembed-col N_noemb --tokens-per-step-col tps
     --total-steps-col steps --peak-lr-col plr --warmup-col warm --schedule-col sched --seed-col seed --step-col step
     --tokens-col tok --loss-col val_c4,val_wiki)
"$S" import --runs "$tmp/runs.csv" --curves "$tmp/curves.csv" "${MAP[@]}" --out "$tmp/L1" > "$tmp/log" 2>&1 || { fail "import csv"; cat "$tmp/log"; }
grep -q "imported 2 runs in 2 groups, 10 evaluations of 2 loss column" "$tmp/log" || fail "import summary: $(cat "$tmp/log")"
[ -f "$tmp/L1/ladder.json" ] && [ -f "$tmp/L1/runs.csv" ] && [ -f "$tmp/L1/curves.csv" ] || fail "ladder directory incomplete"
grep -q '"b,2k",m,2000000,1700000,4096,100,0.003,10,cosine:min=0.1,1,' "$tmp/L1/runs.csv" || fail "runs.csv row: $(sed -n 3p "$tmp/L1/runs.csv")"

# The same as JSONL (numbers and strings), and with the run columns in the curves table only.
python3 - "$tmp" <<'EOF'
import csv, json, sys
t = sys.argv[1]
runs = {r["name"]: r for r in csv.DictReader(open(f"{t}/runs.csv"))}
with open(f"{t}/runs.jsonl", "w") as f:
    for r in runs.values():
        f.write(json.dumps({k: (v if k in ("name", "size", "sched") else float(v)) for k, v in r.items()}) + "\n")
with open(f"{t}/curves.jsonl", "w") as f, open(f"{t}/joined.csv", "w", newline="") as g:
    w = None
    for c in csv.DictReader(open(f"{t}/curves.csv")):
        f.write(json.dumps({k: (v if k == "name" else float(v)) for k, v in c.items()}) + "\n")
        row = {**runs[c["name"]], **c}
        if w is None:
            w = csv.DictWriter(g, fieldnames=list(row)); w.writeheader()
        w.writerow(row)
EOF
"$S" import --runs "$tmp/runs.jsonl" --curves "$tmp/curves.jsonl" "${MAP[@]}" --out "$tmp/L2" > /dev/null 2>&1 || fail "import jsonl"
"$S" import --curves "$tmp/joined.csv" "${MAP[@]}" --out "$tmp/L3" > /dev/null 2>&1 || fail "import joined"
for d in L2 L3; do
    for f in runs.csv curves.csv; do
        cmp -s "$tmp/L1/$f" "$tmp/$d/$f" || { fail "$d/$f differs from the CSV import"; diff "$tmp/L1/$f" "$tmp/$d/$f" | head -4; }
    done
done
# Round trip: the ladder directory is itself in the format; importing it again gives the same bytes.
"$S" import --runs "$tmp/L1/runs.csv" --curves "$tmp/L1/curves.csv" --loss-col val_c4,val_wiki --out "$tmp/L4" > /dev/null 2>&1 || fail "re-import"
cmp -s "$tmp/L1/runs.csv" "$tmp/L4/runs.csv" && cmp -s "$tmp/L1/curves.csv" "$tmp/L4/curves.csv" || fail "round trip not identical"

# An export that logs tokens seen and no step: the step is tokens / tokens_per_step (here the same ladder); a
# token count that is no whole number of steps is refused, naming the row.
python3 -c "
import csv, sys
w = csv.writer(open(sys.argv[2], 'w', newline=''), lineterminator='\n')
for r in csv.reader(open(sys.argv[1])): w.writerow(r[:1] + r[2:])" "$tmp/curves.csv" "$tmp/tok_only.csv"
MAP_TOK=(--run-id-col name --group-col size --n-params-col N --n-params-nonembed-col N_noemb --tokens-per-step-col tps
     --total-steps-col steps --peak-lr-col plr --warmup-col warm --schedule-col sched --seed-col seed
     --tokens-col tok --loss-col val_c4,val_wiki)   # MAP without --step-col
"$S" import --runs "$tmp/runs.csv" --curves "$tmp/tok_only.csv" "${MAP_TOK[@]}" --out "$tmp/LT" > /dev/null 2>&1 || fail "import with tokens and no step"
cmp -s "$tmp/L1/curves.csv" "$tmp/LT/curves.csv" && cmp -s "$tmp/L1/runs.csv" "$tmp/LT/runs.csv" || fail "steps from tokens give another ladder"
sed '3s/^"b,2k",81920,/"b,2k",81000,/' "$tmp/tok_only.csv" > "$tmp/tok_bad.csv"
out=$("$S" import --runs "$tmp/runs.csv" --curves "$tmp/tok_bad.csv" "${MAP_TOK[@]}" --out "$tmp/bad" 2>&1)
echo "$out" | grep -q "tok_bad.csv:3: column 'tok': 81000 tokens is not a whole number of steps of 4096 tokens (run 'b,2k'" ||
    fail "tokens off the steps: $out"

# LR sweeps: runs alike but for their peak LR. Without --best-lr a note counts them; with it each sweep keeps
# its run with the lowest last loss among those evaluated to the sweep's last step (s-hi, which stopped early
# at a lower loss, is not it); another seed or group is another sweep, one LR alone none; a run alike to another
# at its LR too (logged twice?) is counted in a second note.
cat > "$tmp/sweep.csv" <<'EOF'
run_id,group,n_params,tokens_per_step,total_steps,peak_lr,seed,schedule,step,loss
s-lo,s,1e6,1000,100,0.001,1,cosine,50,3.6
s-lo,s,1e6,1000,100,0.001,1,cosine,100,3.30
s-mid,s,1e6,1000,100,0.002,1,cosine,50,3.5
s-mid,s,1e6,1000,100,0.002,1,cosine,100,3.20
s-hi,s,1e6,1000,100,0.004,1,cosine,50,3.1
s2-lo,s,1e6,1000,100,0.001,2,cosine,100,3.25
s2-mid,s,1e6,1000,100,0.002,2,cosine,100,3.28
m-only,m,2e6,1000,100,0.002,1,cosine,100,3.0
EOF
out=$("$S" import --curves "$tmp/sweep.csv" --loss-col loss --out "$tmp/SW1" 2>&1)
echo "$out" | grep -q "note: 2 LR sweeps, 5 runs alike but for their peak LR" || fail "sweep note: $out"
out=$("$S" import --curves "$tmp/sweep.csv" --loss-col loss --best-lr --out "$tmp/SW2" 2>&1)
echo "$out" | grep -q "kept the best run of each of 2 LR sweeps by its last loss: 3 of their 5 runs left out" &&
    [ "$(cut -d, -f1 "$tmp/SW2/runs.csv" | tr '\n' ' ')" = "run_id s-mid s2-lo m-only " ] || fail "--best-lr: $out; $(cut -d, -f1 "$tmp/SW2/runs.csv")"
{ cat "$tmp/sweep.csv"; echo "m-again,m,2e6,1000,100,0.002,1,cosine,100,3.01"; } > "$tmp/repeat.csv"   # m-only twice
out=$("$S" import --curves "$tmp/repeat.csv" --loss-col loss --out "$tmp/SW3" 2>&1)
echo "$out" | grep -q "note: 1 runs repeat an earlier run's group, length, schedule, peak LR and seed" || fail "repeat note: $out"
out=$("$S" import --from-ladder x.ladder --best-lr --out "$tmp/bad" 2>&1); echo "$out" | grep -q -- "--best-lr does not apply to --from-ladder" ||
    fail "--best-lr with --from-ladder: $out"

# A spreadsheet or W&B export: a UTF-8 byte order mark, CRLF line ends, and rows at steps logged without an
# evaluation (every loss cell empty) between the evaluations, one at step 0, and a metric import does not read:
# the same ladder, the rows left out counted.
{ printf '\xef\xbb\xbf'; sed -n 1p "$tmp/curves.csv"
  echo "a-1k,0,0,7.7,7.9"   # an evaluation before any update: left out
  for s in 20 40 60 80 100; do
      grep -E "^(a-1k|\"b,2k\"),$s," "$tmp/curves.csv"
      echo "a-1k,$((s - 10)),$(((s - 10) * 4096)),,"
  done; } | sed '1s/$/,train\/loss/; 2,$s/$/,3.1/; s/$/\r/' > "$tmp/sparse.csv"   # and a column import does not read
"$S" import --runs "$tmp/runs.csv" --curves "$tmp/sparse.csv" "${MAP[@]}" --out "$tmp/L5" > "$tmp/log5" 2>&1 || { fail "import sparse"; cat "$tmp/log5"; }
grep -q "(5 curve rows had no loss value and no lr, steps logged without an evaluation: skipped)" "$tmp/log5" || fail "no count of the rows skipped: $(cat "$tmp/log5")"
grep -q "(1 curve rows at step 0, before any update, left out: the laws start at step 1)" "$tmp/log5" || fail "step 0 not said: $(cat "$tmp/log5")"
cmp -s "$tmp/L1/curves.csv" "$tmp/L5/curves.csv" && cmp -s "$tmp/L1/runs.csv" "$tmp/L5/runs.csv" || fail "the sparse export gives another ladder"

# Refusals: one line naming file, row and column; no directory left behind.
refuse() {  # pattern, curves-file, extra args...
    [ "$1" = -- ] && shift   # a pattern starting with '-'
    local pat=$1 cur=$2; shift 2
    local out rc
    out=$("$S" import --runs "$tmp/runs.csv" --curves "$cur" "${MAP[@]}" "$@" --out "$tmp/bad" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "expected a refusal ($pat), exit $rc"
    printf '%s\n' "$out" | grep -q -- "$pat" || fail "said: $out (expected /$pat/)"
    ls "$tmp" | grep -q '^bad' && { fail "left $(ls "$tmp" | grep '^bad') behind ($pat)"; rm -rf "$tmp"/bad*; }
}
edit() { sed "$1" "$tmp/curves.csv" > "$tmp/c.csv"; echo "$tmp/c.csv"; }
refuse "curves.csv: no column 'val_c5' (given by --loss-col)" "$tmp/curves.csv" --loss-col val_c5
refuse "c.csv:4: column 'step': step 20 comes after step 40 of run 'a-1k'" "$(edit '4s/^a-1k,40/a-1k,20/;2s/^a-1k,20/a-1k,40/')"
refuse "c.csv:4: column 'step': step 20 repeats step 20 of run 'a-1k'" "$(edit '4s/^a-1k,40/a-1k,20/')"
refuse "c.csv:2: column 'val_c4': nan is not finite" "$(edit '2s/,[0-9.]*,\([0-9.]*\)$/,nan,\1/')"
refuse "c.csv:2: column 'val_c4': 'x' is not a number" "$(edit '2s/,[0-9.]*,\([0-9.]*\)$/,x,\1/')"
refuse "c.csv:2: column 'tok': -5 is negative" "$(edit '2s/^a-1k,20,[0-9]*/a-1k,20,-5/')"
refuse "c.csv:12: column 'name': run 'zz' has no metadata" "$(edit '$a zz,10,40960,3,3')"
refuse "c.csv:2: column 'step': step 200 is not a whole number in \[1, 100\]" "$(edit '2s/^a-1k,20,/a-1k,200,/')"
refuse "c.csv:2: column 'val_wiki': empty, while column 'val_c4' has a value (losses logged at different steps: import each into a ladder of its own, --loss-col val_c4, then --loss-col val_wiki" "$(edit '2s/,[0-9.]*$/,/')"
# ... as it says: each loss column on its own imports, the other's gap a row without an evaluation
"$S" import --runs "$tmp/runs.csv" --curves "$(edit '2s/,[0-9.]*$/,/')" "${MAP[@]}" --loss-col val_c4 --out "$tmp/Lc4" > "$tmp/log_c4" 2>&1 &&
    "$S" import --runs "$tmp/runs.csv" --curves "$tmp/c.csv" "${MAP[@]}" --loss-col val_wiki --out "$tmp/Lwiki" > "$tmp/log_wiki" 2>&1 &&
    grep -q "(1 curve rows had no loss value and no lr" "$tmp/log_wiki" && ! grep -q "no loss value" "$tmp/log_c4" ||
    fail "one loss column at a time: $(cat "$tmp/log_c4" "$tmp/log_wiki")"
refuse "runs.csv: run 'a-1k' has no rows with a loss value in .*c.csv" "$(edit '/^a-1k/s/,[0-9.]*,[0-9.]*$/,,/')"
refuse "c.csv:2: 4 fields, the header has 5" "$(edit '2s/,[0-9.]*$//')"
refuse "curves.csv: no column 'time' (given by --step-col)" "$tmp/curves.csv" --step-col time
refuse "runs.csv: no column 'nope_tps' (given by --tokens-per-step-col)" "$tmp/curves.csv" --tokens-per-step-col nope_tps
refuse "runs.csv:2: run 'a-1k' has no tokens_per_step" "$tmp/curves.csv" --tokens-per-step-col ""
refuse "c.csv:2: column 'val_c4': loss 0 is not positive" "$(edit '2s/,[0-9.]*,\([0-9.]*\)$/,0,\1/')"
refuse "c.csv:4: column 'tok': tokens go down within run 'a-1k'" "$(edit '4s/^a-1k,40,[0-9]*/a-1k,40,1/')"
refuse "c.csv:2: malformed quoted field" "$(edit '2s/^a-1k/"a-1k/')"
refuse "c.csv:1: malformed quoted header" "$(edit '1s/^name/"name/')"
refuse "c.csv: empty table" "$(edit '1,$d')"
refuse "c.csv:1: the header is one column holding tabs: the curves and runs tables are comma-separated" "$(edit 's/,/\t/g')"
echo '[1, 2]' > "$tmp/c.jsonl"; refuse "c.jsonl:1: not a JSON object" "$tmp/c.jsonl"
refuse "cannot open $tmp/none.csv" "$tmp/none.csv"
refuse "runs.csv:2: run 'a-1k': role 'maybe' is not fit or heldout" "$tmp/curves.csv" --role maybe
refuse -- "--flops-per-token: 'x' is not a finite non-negative number" "$tmp/curves.csv" --flops-per-token x
refuse "name the loss column(s) with --loss-col" "$tmp/curves.csv" --loss-col ""
refuse -- "--loss-col: bad column name in 'val_c4,,val_wiki'" "$tmp/curves.csv" --loss-col val_c4,,val_wiki
refuse -- "--loss-col: at most 16 loss columns" "$tmp/curves.csv" --loss-col "$(seq -s, -f 'l%g' 17)"
refuse -- "--loss-col: 'val_c4' is named twice" "$tmp/curves.csv" --loss-col val_c4,val_wiki,val_c4
# Refusals of the runs table: each edit of a-1k's row (line 2) and the message naming it.
refuse_runs() {  # pattern, sed edit of runs.csv
    sed "$2" "$tmp/runs.csv" > "$tmp/r.csv"
    local out
    out=$("$S" import --runs "$tmp/r.csv" --curves "$tmp/curves.csv" "${MAP[@]}" --out "$tmp/bad" 2>&1 >/dev/null)
    printf '%s\n' "$out" | grep -q -- "$1" || fail "said: $out (expected /$1/)"
    [ -e "$tmp/bad" ] && { fail "left bad behind ($1)"; rm -rf "$tmp/bad"; }
}
refuse_runs "r.csv:2: run 'a-1k' has no parameter count (map a column with --n-params-col" '2s/,1000000,800000,/,,,/'
refuse_runs "no parameter count is given for every run: run 'b,2k' has only n_params (with embeddings), run 'a-1k' only n_params_nonembed" \
    '2s/,1000000,800000,/,,800000,/; 3s/,2000000,1700000,/,2000000,,/'
refuse_runs "r.csv:2: run 'a-1k' has no total_steps or total_tokens" '2s/,4096,100,/,4096,,/'
refuse_runs "r.csv:2: run 'a-1k': parameter counts, tokens_per_step and peak_lr must be positive" '2s/,0.004,/,0,/'
refuse_runs "r.csv:2: run 'a-1k': total steps 100.5 is not a whole number in \[1, 2^30\]" '2s/,4096,100,/,4096,100.5,/'
refuse_runs "r.csv:2: run 'a-1k': seed 1e+80 is not a whole number in \[0, 2^53\]" '2s/,\([0-9]\)$/,1e80/'
refuse_runs "r.csv:2: run 'a-1k': schedule 'bogus': " '2s/cosine:min=0.1/bogus/'
refuse_runs "r.csv:2: column 'name': empty run id" '2s/^a-1k//'
refuse_runs "r.csv: no runs: the table has a header and no rows" '2,$d'
refuse_runs "r.csv: run 'c-3k' has no rows in .*curves.csv" '$a c-3k,l,3000000,2500000,4096,100,0.002,10,cosine:min=0.1,1'
refuse_runs "curves.csv: run 'a-1k' has neither a schedule nor an lr column" '2s/cosine:min=0.1//'
out=$("$S" import --curves "$tmp/curves.csv" --loss-col val_c4 --out "$tmp/bad" 2>&1)
printf '%s\n' "$out" | grep -q "curves.csv: no column 'run_id' (map it with --run-id-col)" || fail "no run_id column: $out"
out=$("$S" import --loss-col val_c4 --out "$tmp/bad" 2>&1)
printf '%s\n' "$out" | grep -q "give the curves table (--curves FILE)" || fail "no curves table: $out"
sed 's/^"b,2k",m/a-1k,m/' "$tmp/runs.csv" > "$tmp/r2.csv"
out=$("$S" import --runs "$tmp/r2.csv" --curves "$tmp/curves.csv" "${MAP[@]}" --out "$tmp/bad" 2>&1)
printf '%s\n' "$out" | grep -q "r2.csv:3: column 'name': run 'a-1k' appears twice" || fail "duplicate run: $out"
out=$("$S" import --curves "$tmp/joined.csv" "${MAP[@]}" --out "$tmp/L1" 2>&1)
printf '%s\n' "$out" | grep -q "L1 already exists" || fail "existing output: $out"
# --out with a trailing slash (before: "cannot rename L8/.tmpPID to L8/", an empty L8 left behind).
"$S" import --curves "$tmp/joined.csv" "${MAP[@]}" --out "$tmp/L8/" > /dev/null 2>&1 && cmp -s "$tmp/L1/runs.csv" "$tmp/L8/runs.csv" ||
    fail "--out DIR/"
sed '0,/^a-1k,s,1000000,800000,4096,100,0.004,/s//a-1k,s,1000000,800000,4096,100,0.005,/' "$tmp/joined.csv" > "$tmp/j2.csv"
out=$("$S" import --curves "$tmp/j2.csv" "${MAP[@]}" --out "$tmp/bad" 2>&1)
printf '%s\n' "$out" | grep -q "j2.csv:4: column 'plr': run 'a-1k' changes its peak_lr ('0.005' on line 2)" || fail "changing metadata: $out"
# A spreadsheet that gives a run's metadata once (empty cells on its later rows) and writes a number two ways:
# the same ladder (before: "changes its n_params").
python3 - "$tmp" <<'EOF'
import csv, sys
t = sys.argv[1]
rows = list(csv.DictReader(open(f"{t}/joined.csv")))
seen = set()
with open(f"{t}/once.csv", "w", newline="") as g:
    w = csv.DictWriter(g, fieldnames=list(rows[0])); w.writeheader()
    for r in rows:
        if r["name"] in seen:
            r.update({k: "" for k in ("size", "N_noemb", "tps", "steps", "warm", "sched", "seed")})
            r["N"] = f"{float(r['N']):.0e}"
        seen.add(r["name"])
        w.writerow(r)
EOF
"$S" import --curves "$tmp/once.csv" "${MAP[@]}" --out "$tmp/L7" > /dev/null 2>&1 && cmp -s "$tmp/L1/runs.csv" "$tmp/L7/runs.csv" &&
    cmp -s "$tmp/L1/curves.csv" "$tmp/L7/curves.csv" || fail "metadata given once, numbers written two ways: $(cat "$tmp/L7/runs.csv")"
# A --FIELD value where every run has the field in its table is said to be unused (before: silence).
"$S" import --curves "$tmp/joined.csv" "${MAP[@]}" --peak-lr 0.5 --out "$tmp/L9" 2>&1 | grep -q "(--peak-lr not used: every run has that field in the tables" ||
    fail "an unused --peak-lr"
# JSONL values that are not cells: a boolean loss was read as 1.
sed '2s/"val_c4": [0-9.e+-]*/"val_c4": true/' "$tmp/curves.jsonl" > "$tmp/b.jsonl"
refuse "b.jsonl:2: key 'val_c4': a boolean is not a value import reads (a number, a string or null)" "$tmp/b.jsonl"
# An edited ladder directory is refused by its checksum (read through `sextant backtest`).
cp -r "$tmp/L1" "$tmp/L5"; sed -i 's/^a-1k,20,/a-1k,21,/' "$tmp/L5/curves.csv"
out=$("$S" backtest "$tmp/L5" 2>&1)
printf '%s\n' "$out" | grep -q "curves.csv: sha256 does not match ladder.json" || fail "tampered ladder: $out"

# Too few evaluations for the joint law: three sizes of two points each are imported, and `fit` says why it
# cannot fit them (before: "nds fit: 4 points for 9 free parameters", of a ladder that has 6).
printf 'run_id,group,n_params,tokens_per_step,total_steps,peak_lr,warmup,schedule,step,loss\n' > "$tmp/sparse.csv"
for r in 1:3.5:3.2 2:3.3:3.0 4:3.1:2.8; do IFS=: read -r n a b <<< "$r"
    printf 'r%s,s%s,%se6,1000,100,0.001,10,cosine,50,%s\nr%s,s%s,%se6,1000,100,0.001,10,cosine,100,%s\n' $n $n $n $a $n $n $n $b
done >> "$tmp/sparse.csv"
"$S" import --curves "$tmp/sparse.csv" --loss-col loss --out "$tmp/LS" > /dev/null 2>&1 || fail "import of the sparse ladder"
out=$("$S" fit "$tmp/LS" 2>&1); rc=$?
[ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "choosing N one size back (the largest size forecast from those below it; with fewer than 3 sizes, each run from the others): curve fit: 4 points at or after 10% of their runs (2 runs), for a law of 9 free parameters" ||
    fail "a sparse ladder's fit (rc $rc): $out"

# A ladder directory of another format or version, or none at all.
cp -r "$tmp/L1" "$tmp/L6"; sed -i 's/"version": 1/"version": 2/' "$tmp/L6/ladder.json"
out=$("$S" backtest "$tmp/L6" 2>&1); printf '%s\n' "$out" | grep -q "L6/ladder.json: version 2, this sextant reads version 1" || fail "version: $out"
sed -i 's/"sextant-curve-ladder"/"other"/' "$tmp/L6/ladder.json"
out=$("$S" backtest "$tmp/L6" 2>&1); printf '%s\n' "$out" | grep -q 'L6/ladder.json: "format" is not "sextant-curve-ladder"' || fail "format: $out"
out=$("$S" backtest "$tmp" 2>&1); printf '%s\n' "$out" | grep -q "not a ladder directory (no ladder.json; see \`sextant import\`)" || fail "no ladder: $out"

[ $fails -eq 0 ] && echo "import: all checks passed"
exit $((fails > 0))
