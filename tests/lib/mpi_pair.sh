# Sourced by the 2-rank MPI tests that compare runs (mpi_overlap.sh, mpi_zero.sh). The caller defines S, MPI,
# tmp, common (train flags), fail, losses DIR (the metrics lines compared) and compared (what they are, for
# the message).

# run NAME ARGS...: a 2-rank run into $tmp/NAME (its stderr in $tmp/NAME.log).
run() {
    local name=$1; shift
    SEXTANT_DIST_CHECK=1 "${MPI[@]}" "$S" train "${common[@]}" "$@" --out "$tmp/$name" > "$tmp/$name.log" 2>&1 ||
        { fail "2-rank run $name"; cat "$tmp/$name.log"; }
}
# same A B: A's and B's final checkpoints and $compared are identical.
same() {
    cmp -s "$tmp/$1/checkpoint.sxt" "$tmp/$2/checkpoint.sxt" || fail "$2's checkpoint differs from $1's"
    [ -n "$(losses "$tmp/$1")" ] && [ "$(losses "$tmp/$1")" = "$(losses "$tmp/$2")" ] || fail "$2's $compared differ from $1's"
}
