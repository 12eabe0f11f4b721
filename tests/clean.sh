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

check() {   # check CLEANER INPUT EXPECTED: the output goes to $work/SOURCE.out, SOURCE named by EXPECTED
    local out; out=$work/$(basename "$3" .expected)
    $C "$1" "$2" > "$out.out"
    diff -u "$3" "$out.out" || fail "$1 cleaner: output differs from $3"
    $C "$1" "$out.out" > "$out.again"
    cmp -s "$out.out" "$out.again" || { diff -u "$out.out" "$out.again"; fail "$1 cleaner is not idempotent on $2"; }
}
check gcide $F/gcide.dict $F/gcide.expected
check foldoc $F/foldoc.dict $F/foldoc.expected
check rst $F/linux-doc.rst $F/linux-doc.expected
check pydoc $F/python-doc.rst.txt $F/python-doc.expected
check pod $F/perl-doc.pod $F/perl-doc.expected
check html $F/postgresql-doc.html $F/postgresql-doc.expected
check html $F/sqlite-doc.html $F/sqlite-doc.expected
check html $F/django-doc.html $F/django-doc.expected
check html $F/git-doc.html $F/git-doc.expected

# Spot checks: markup gone, text kept.
has() { grep -qF -- "$2" "$work/$1.out" || fail "$1: '$2' was lost"; }
hasnt() { ! grep -qF -- "$2" "$work/$1.out" || fail "$1: '$2' should have been removed"; }
for m in '[1913 Webster]' '[PJC]' '00-database' 'GNU General Public' '\Co*ag' '{Cogent}' '[=a]' '[a^]'; do hasnt gcide "$m"; done
has gcide 'Coagulate, v. t. [imp. & p. p. Coagulated;'
has gcide 'Syn: To thicken; concrete; curdle; clot; congeal.'
has gcide 'in an aëroplane or flying machine.'
has gcide 'Amber fish(ăm"bẽr*fĭsh`)'
[ "$(grep -c '' "$work/gcide.out")" -eq 27 ] || fail "gcide: hard-wrapped lines were not joined into paragraphs"
for m in '00-database' 'original data' 'FOLDOC is a searchable' '%%%' '<programming>' '<Debian>' '{' 'http' 'ftp:' \
         '@' 'E-mail' '(1994-11-08)' '["Laws for' 'the same freedoms' '59 Temple Place' 'Joey Hess' 'Permission is granted'; do
    hasnt foldoc "$m"
done
has foldoc '1. In object-oriented programming, an object which exists as a concurrent process.'
has foldoc 'A model for concurrency by Carl Hewitt. Actors are autonomous and concurrent objects which execute asynchronously.'
has foldoc 'Home of the Brave Ada Programmers. Ada FAQs (hypertext), text only.'
has foldoc 'General Public Virus, GPV'
has foldoc 'A member of the Debian project.'
for m in SPDX '.. ' '====' 'toctree' 'free software' 'Copyright' 'Jesse' '/sys/devices' 'open(' 'kernel-doc' ':ref:' '``' '[1]_' '**' 'pcisig.com' 'rw for RW'; do hasnt linux-doc "$m"; done
has linux-doc 'Accessing PCI device resources through sysfs'
has linux-doc 'sysfs, usually mounted at /sys, provides access'
has linux-doc 'the PCI howto and pci_enable_device).'
has linux-doc 'The rom file is special: it is disabled by default, see the'
has linux-doc 'PCI resource N, if present (binary, mmap, rw)'
for m in ':mod:' 'moduleauthor' 'testsetup' 'import functools' 'factorial' '>>>' 'wikipedia' 'index::' '~functools'; do hasnt python-doc "$m"; done
has python-doc 'reduce(function, iterable[, initializer])'
has python-doc 'lru_cache with a size limit.  See 412 and'
has python-doc 'New in version 3.9.'
has python-doc 'Changed in version 3.2:'
has python-doc 'itertools.accumulate yields all intermediate values.'
for m in 'X<' 'C<' 'E<' 'L<' '=head' '=item' '=over' 'only for HTML' 'right place' 'print 1+2+4' 'Larry Wall' \
         'free software' 'Copyright' 'SEE ALSO' 'perlsub' 'this_is_not_documentation'; do hasnt perl-doc "$m"; done
has perl-doc 'perlfunc - Perl builtin functions'
has perl-doc 'It looks like a function, therefore it is a'
has perl-doc 'q//, tr///'
has perl-doc 'The spaceship operator $a <=> $b returns -1, 0 or 1, and'
has perl-doc '$x->{key} looks up a hash element; <STDIN> reads a line.'
has perl-doc 'See Equality Operators in perlop and the tutorial.'
has perl-doc 'Prototypes are not checked when a function is called as a method.'
for m in '<' 'Prev' 'Table of Contents' '3.1. Introduction' 'CREATE TABLE cities' 'INSERT INTO weather' \
         'weather_city_fkey' 'Copyright' 'PostgreSQL Global Development Group'; do hasnt postgresql-doc "$m"; done
has postgresql-doc 'Recall the weather and cities tables from Chapter 2. Consider the following problem: You want'
has postgresql-doc "text || text → text"
has postgresql-doc "'Value: ' || 42 → Value: 42"
for m in 'Small. Fast.' 'Search Documentation' 'Table Of Contents' 'create-table-stmt:' 'column-def:' 'column-name' \
         'CHECK( x>3 )' 'PRAGMA integrity_check;' 'This page last modified' 'show'; do hasnt sqlite-doc "$m"; done
has sqlite-doc 'Optionally, a generated column constraint.'
has sqlite-doc 'The parent key of a foreign key constraint is not allowed to use the rowid.'
for m in 'Django 3.2.25 documentation' '¶' 'previous' 'post_comment' 'new_comment' 'Table of contents' \
         'Quick search'; do hasnt django-doc "$m"; done
has django-doc 'Using cached sessions'
has django-doc 'If you have multiple caches defined in CACHES, Django will use the default cache.'
for m in 'AsciiDoc' 'Shared CSS' 'style sheet' 'D---E---F---G' 'git rebase master topic' 'Last updated' \
         '2024-05-31'; do hasnt git-doc "$m"; done
has git-doc 'git-rebase - Reapply commits on top of another base tip'
has git-doc 'If <branch> is specified, git rebase will perform an automatic git switch <branch> before'
has git-doc 'NOTE: The latter form is just a short-hand of git checkout topic followed by git rebase master.'

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
