#!/usr/bin/env bash
# The mixture's cleaners (scripts/mixture_clean.py) on small fixtures in tests/data/clean: each source's
# markup is removed and its text kept (exact expected output, plus spot checks that fail if a rule is
# lost), and cleaning is idempotent. Then fetch-data's package check: a good .deb passes; a truncated one,
# one with a flipped byte, and one whose files do not match its own md5sums are refused with a clear
# message. No network, no real packages.
set -euo pipefail
work=${SEXTANT_BUILD:-build}/tests/clean
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
C="python3 scripts/mixture_clean.py clean"
F=tests/data/clean

check() {   # check SOURCE INPUT EXPECTED
    $C "$1" "$2" > "$work/$1.out"
    diff -u "$3" "$work/$1.out" || fail "$1 cleaner: output differs from $3"
    $C "$1" "$work/$1.out" > "$work/$1.again"
    cmp -s "$work/$1.out" "$work/$1.again" || { diff -u "$work/$1.out" "$work/$1.again"; fail "$1 cleaner is not idempotent"; }
}
check gcide $F/gcide.dict $F/gcide.expected
check rst $F/linux-doc.rst $F/linux-doc.expected
check pydoc $F/python-doc.rst.txt $F/python-doc.expected

# Spot checks: markup gone, text kept.
has() { grep -qF -- "$2" "$work/$1.out" || fail "$1: '$2' was lost"; }
hasnt() { ! grep -qF -- "$2" "$work/$1.out" || fail "$1: '$2' should have been removed"; }
for m in '[1913 Webster]' '[PJC]' '00-database' 'GNU General Public' '\Co*ag' '{Cogent}' '[=a]' '[a^]'; do hasnt gcide "$m"; done
has gcide 'Coagulate, v. t. [imp. & p. p. Coagulated;'
has gcide 'Syn: To thicken; concrete; curdle; clot; congeal.'
has gcide 'in an aëroplane or flying machine.'
has gcide 'Amber fish(ăm"bẽr*fĭsh`)'
[ "$(grep -c '' "$work/gcide.out")" -eq 27 ] || fail "gcide: hard-wrapped lines were not joined into paragraphs"
for m in SPDX '.. ' '====' 'toctree' 'free software' 'Copyright' 'Jesse' '/sys/devices' 'open(' 'kernel-doc' ':ref:' '``' '[1]_' '**' 'pcisig.com' 'rw for RW'; do hasnt rst "$m"; done
has rst 'Accessing PCI device resources through sysfs'
has rst 'sysfs, usually mounted at /sys, provides access'
has rst 'the PCI howto and pci_enable_device).'
has rst 'The rom file is special: it is disabled by default, see the'
has rst 'PCI resource N, if present (binary, mmap, rw)'
for m in ':mod:' 'moduleauthor' 'testsetup' 'import functools' 'factorial' '>>>' 'wikipedia' 'index::' '~functools'; do hasnt pydoc "$m"; done
has pydoc 'reduce(function, iterable[, initializer])'
has pydoc 'lru_cache with a size limit.  See 412 and'
has pydoc 'New in version 3.9.'
has pydoc 'Changed in version 3.2:'
has pydoc 'itertools.accumulate yields all intermediate values.'

# fetch-data --verify-deb on a package built here.
pkg=$work/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/share/doc/sx-fixture"
printf 'Package: sx-fixture\nVersion: 1.0\nArchitecture: all\nMaintainer: sextant <sx@example.org>\nDescription: fixture\n' > "$pkg/DEBIAN/control"
seq 1 20000 > "$pkg/usr/share/doc/sx-fixture/numbers.txt"
(cd "$pkg" && md5sum usr/share/doc/sx-fixture/numbers.txt > DEBIAN/md5sums)
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$work/good.deb" >/dev/null
record() { echo "$(sha256sum "$1" | cut -d' ' -f1) $(stat -c %s "$1")" > "$1.sha256"; }
record "$work/good.deb"
scripts/fetch-data --verify-deb "$work/good.deb" || fail "a good package was refused"

refused() {   # refused FILE PATTERN: fetch-data must exit non-zero naming the problem
    if scripts/fetch-data --verify-deb "$1" 2> "$work/err"; then fail "$1 was accepted"; fi
    grep -q "$2" "$work/err" || fail "$1: expected '$2' in: $(cat "$work/err")"
}
head -c 2000 "$work/good.deb" > "$work/trunc.deb"; cp "$work/good.deb.sha256" "$work/trunc.deb.sha256"
refused "$work/trunc.deb" "truncated or corrupted: 2000 bytes, the package index says"
cp "$work/good.deb" "$work/flip.deb"; cp "$work/good.deb.sha256" "$work/flip.deb.sha256"
printf '\x55' | dd of="$work/flip.deb" bs=1 seek=1500 conv=notrunc status=none
refused "$work/flip.deb" "is corrupted: sha256"
# A package whose own md5sums do not match its files (the sum recorded for the package itself is right).
echo "00000000000000000000000000000000  usr/share/doc/sx-fixture/numbers.txt" > "$pkg/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$work/md5.deb" >/dev/null; record "$work/md5.deb"
refused "$work/md5.deb" "do not match the package's own md5sums"
# A truncated archive whose record was (wrongly) made from the truncated file: dpkg-deb itself refuses it.
head -c 3000 "$work/good.deb" > "$work/short.deb"; record "$work/short.deb"
refused "$work/short.deb" "is not a readable package"
refused "$work/missing.deb" "no such package file"
echo "clean: all checks passed"
