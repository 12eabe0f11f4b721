# Sourced by the MPI tests that compare runs (mpi_overlap.sh and mpi_zero.sh on 2 ranks, mpi_three.sh on 3),
# right after S is set: it skips the test (exit 0, with a message) when mpirun is missing or $S was built
# without MPI, and sets MPI, the launch of ${ranks:-2} ranks. The caller then defines tmp, common (train
# flags), fail, losses DIR (the metrics lines compared) and compared (what they are, for the message).
me=$(basename "$0")
command -v mpirun >/dev/null 2>&1 || { echo "$me: skipped, mpirun not found"; exit 0; }
ldd "$S" 2>/dev/null | grep -q libmpi || { echo "$me: skipped, $S was built without MPI"; exit 0; }
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0   # libmpi keeps its allocations to the end
MPI=(timeout 60 mpirun --allow-run-as-root --oversubscribe -np "${ranks:-2}")

# run NAME ARGS...: a run on the ranks into $tmp/NAME (its stderr in $tmp/NAME.log), the parameters of every
# rank compared after every step.
run() {
    local name=$1; shift
    SEXTANT_DIST_CHECK=1 "${MPI[@]}" "$S" train "${common[@]}" "$@" --out "$tmp/$name" > "$tmp/$name.log" 2>&1 ||
        { fail "${ranks:-2}-rank run $name"; cat "$tmp/$name.log"; }
}
# same A B: A's and B's final checkpoints and $compared are identical.
same() {
    cmp -s "$tmp/$1/checkpoint.sxt" "$tmp/$2/checkpoint.sxt" || fail "$2's checkpoint differs from $1's"
    [ -n "$(losses "$tmp/$1")" ] && [ "$(losses "$tmp/$1")" = "$(losses "$tmp/$2")" ] || fail "$2's $compared differ from $1's"
}
# resume_dir NAME FROM: a run directory holding FROM's step-6 checkpoint (--save-at) and metrics, to --resume.
resume_dir() {
    mkdir -p "$tmp/$1"
    cp "$tmp/$2/ckpt-6.sxt" "$tmp/$1/checkpoint.sxt"
    head -6 "$tmp/$2/metrics.jsonl" > "$tmp/$1/metrics.jsonl"
    cp "$tmp/$2/config.json" "$tmp/$1/"
}
