#!/usr/bin/env bash
# Programmer errors are always-on SX_CHECKs that say what to do (core/status.h), never plain assert(), which
# NDEBUG compiles away (issue 20's failure policy). Fails on an assert( call or <assert.h> in src/; with no
# argument it also checks that it catches a planted one. Usage: tests/checks_not_asserts.sh [SRC_DIR]
set -u
check_dir() {   # prints "file:line: text" for each assert in $1 (comments stripped); returns 1 if any
    local hits
    hits=$(grep -rnE --include='*.c' --include='*.h' '(^|[^_[:alnum:]])assert[[:space:]]*\(|#include[[:space:]]*<assert\.h>' "$1" |
           sed 's://.*$::' | grep -E '(^|[^_[:alnum:]])assert[[:space:]]*\(|<assert\.h>')
    [ -z "$hits" ] && return 0
    echo "$hits"; return 1
}
if [ $# -gt 0 ]; then check_dir "$1"; exit $?; fi
fails=0
check_dir src || { echo "FAIL: plain assert in src/: use SX_CHECK(cond, \"what to do\")"; fails=1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'static int f(int k) { assert(k > 0); return k; }   // SX_CHECK(x) is fine\n' > "$tmp/planted.c"
printf 'static int g(int k) { SX_CHECK(k > 0, "k > 0"); return k; }   // assert(k) in a comment\n' > "$tmp/fine.c"
out=$(check_dir "$tmp")
grep -q "planted.c:1" <<<"$out" || { echo "FAIL: planted assert not caught"; fails=1; }
grep -q "fine.c" <<<"$out" && { echo "FAIL: SX_CHECK or a comment taken for an assert: $out"; fails=1; }
[ $fails -eq 0 ] && echo "checks_not_asserts: no plain assert in src/"
exit $fails
