#!/usr/bin/env bash
# Kernels take their workspace from the caller (a `*_workspace_floats` size function beside each kernel that
# needs one; src/model/ carves it from the model's activation block once), so a kernel allocates nothing
# and cannot fail. This test fails on any allocation call (malloc family, sx_alloc family, strdup) in
# src/kernels/*.c outside the two lists below, and on a file listed there that no longer allocates.
# Usage: tests/kernels_no_alloc.sh [KERNELS_DIR]   (default: src/kernels; with no argument it also checks
# that it catches a planted allocation). Part of the test suite, so the rule stays kept.
set -u

# Still allocating, to be moved to a caller's workspace: empty this list as they are.
pending=()
# Allowed for good: none (GEMM packs into the gemm_workspace its caller binds, and gemm_pack_b into the
# caller's panels).
allowed=()

alloc_re='\b(malloc|calloc|realloc|aligned_alloc|posix_memalign|strdup|sx_[a-z_]*alloc[a-z_]*|sx_strdup)[[:space:]]*\('

# Prints "file:line: call" for each allocation call (comments stripped) in $1/*.c outside the lists, and
# "file: listed but allocates nothing" for a stale entry; returns 1 if it printed anything.
check_dir() {
    local dir=$1 bad=0 f base hits
    for f in "$dir"/*.c; do
        base=$(basename "$f")
        hits=$(sed 's://.*$::' "$f" | grep -nE "$alloc_re")
        if [[ " ${pending[*]} ${allowed[*]} " == *" $base "* ]]; then
            [ -z "$hits" ] && { echo "$f: listed in tests/kernels_no_alloc.sh but allocates nothing: drop it from the list"; bad=1; }
            continue
        fi
        [ -n "$hits" ] && { sed "s|^|$f:|" <<<"$hits"; bad=1; }
    done
    return $bad
}

if [ $# -gt 0 ]; then check_dir "$1"; exit $?; fi

fails=0
check_dir src/kernels || { echo "FAIL: kernels that allocate: take the workspace from the caller (see attention.h)"; fails=1; }

# The check must be able to fail: a copy of the kernels with an allocation planted in rmsnorm.c (the
# comment on the same line must not hide it).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp src/kernels/*.c "$tmp/"
echo 'static void *planted(void) { return malloc(4); } // no allocation here' >> "$tmp/rmsnorm.c"
out=$(check_dir "$tmp")
grep -q "rmsnorm.c:[0-9]*:.*malloc(4)" <<<"$out" || { echo "FAIL: planted allocation not caught: $out"; fails=1; }

[ $fails -eq 0 ] && echo "kernels_no_alloc: no kernel allocates (pending: ${pending[*]:-none}; allowed: ${allowed[*]:-none})"
exit $fails
