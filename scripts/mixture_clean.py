#!/usr/bin/env python3
"""mixture_clean: the cleaners of sextant's data mixture (docs/DATA.md says what each removes and why).

Responsible for turning the Debian sources into plain UTF-8 English text, deduplicating the mixture and
splitting it into per-source train and validation documents. Not responsible for downloading or verifying
packages (scripts/fetch-data) or tokenizing (sextant tokenize).

  mixture_clean.py clean SOURCE [FILE]   one source's cleaner on a file (or stdin) to stdout; SOURCE is
                                          gcide or foldoc (dictd .dict text), rst (linux-doc), pydoc (.rst.txt),
                                          pod (perl-doc) or html (postgresql-doc, sqlite-doc, django-doc,
                                          git-doc)
  mixture_clean.py build --out DIR --by-source DIR --gcide DICT --linux-doc DIR --python-doc DIR
                         --perl-doc DIR --postgresql-doc DIR --sqlite-doc DIR --django-doc DIR --git-doc DIR
                         --foldoc DICT
                                          the whole mixture: DIR/<source>.{train,val}.txt + MANIFEST + STATS

Every cleaner is idempotent: cleaning its own output changes nothing (tests/clean.sh checks it).
Only the standard library is used (python3 comes with scripts/setup).
"""
import gzip
import hashlib
import html
import html.parser as htmlparser
import os
import re
import sys
import unicodedata

DELIM = "<|endoftext|>"

# ---------------------------------------------------------------------------------------------------------
# Shared helpers

def normalize(text):
    """CRLF -> LF, control characters other than tab/newline dropped, trailing spaces and blank-line runs
    trimmed, NFC. Used at the end of every cleaner."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f\ufeff]", "", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = unicodedata.normalize("NFC", text).strip("\n")
    return text + "\n" if text else ""


def paragraphs(text):
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


# Licence and copyright boilerplate: paragraphs that are legal text, not documentation.
LICENCE = re.compile(r"This (?:program|documentation|file|library) is free software|Permission is hereby granted|"
                     r"Redistribution and use in source and binary forms|GNU (?:Lesser |Library )?General Public "
                     r"License|GNU Free Documentation License|WITHOUT ANY WARRANTY|SPDX-License-Identifier",
                     re.I)
COPYRIGHT_LINE = re.compile(r"^\s*(?:Copyright\b|\(c\)\s*\d|©)", re.I)


def drop_legal(text):
    """Removes licence paragraphs and copyright lines."""
    keep = []
    for p in paragraphs(text):
        if LICENCE.search(p):
            continue
        lines = [l for l in p.split("\n") if not COPYRIGHT_LINE.match(l)]
        if any(l.strip() for l in lines):
            keep.append("\n".join(lines))
    return "\n\n".join(keep)


# ---------------------------------------------------------------------------------------------------------
# GCIDE (dict-gcide): dictd's plain-text .dict with GCIDE's own markup

# Whole bracket contents that name the entry's source ("[1913 Webster]", "[WordNet 1.5 +PJC]").
SOURCE_NAME = r"(?:1913 Webster|Webster 1913 Suppl\.|WordNet(?: \d[\d.]*| sense \d+)?|PJC\.?|Century Dict\. \d+|RDH|AS|MW10|NRC|Chambers(?: \d+)?)"
SOURCE_TAG = re.compile(r"\s*\[\s*" + SOURCE_NAME + r"(?:\s*\+?\s*" + SOURCE_NAME + r")*\s*\]")
# Diacritics written as ASCII codes: [=a] macron, [a^] breve, ['e] acute, [`e] grave, ["o] diaeresis,
# [~n] tilde, [.a] dot above, [^o] circumflex, [,c] cedilla; and a few named letters.
COMBINING = {"=": "\u0304", "'": "\u0301", "`": "\u0300", '"': "\u0308", "~": "\u0303", ".": "\u0307",
             "^": "\u0302", ",": "\u0327", "-": ""}
NAMED = {"ae": "æ", "oe": "œ", "AE": "Æ", "OE": "Œ", "aum": "ä", "oum": "ö", "uum": "ü", "imac": "ī", "eth": "ð",
         "thorn": "þ", "root": "√", "deg": "°", "ng": "ŋ", "th": "θ", "=ae": "ǣ", "=oo": "o͞o", "oo^": "o͝o",
         "sec": "§", "sect": "§", "para": "¶", "frac12": "½", "frac14": "¼", "frac34": "¾", "ntilde": "ñ", "ccedil": "ç"}
DIACRITIC = re.compile(r"\[(?:([=`'\"~.^,-])([A-Za-z]{1,2})|([A-Za-z])\^|(=ae|=oo|oo\^|[a-zA-Z]{2,6}\d{0,2}))\]")


def _diacritic(m):
    if m.group(1) is not None:
        return m.group(2) + COMBINING[m.group(1)]
    if m.group(3) is not None:
        return m.group(3) + "\u0306"   # breve
    return NAMED.get(m.group(4), m.group(0))


def clean_gcide(text):
    """dictd GCIDE text -> one paragraph per line group, entries separated by blank lines.
    Drops the 00-database-* header entries (with the GPL notice they carry), source tags, the
    \\pro*nun"ci*a`tion\\ after each headword; {cross references} keep their text; diacritic codes become
    Unicode; hard-wrapped lines are joined into paragraphs."""
    if re.search(r"^00-?database-", text, re.M):
        # The header ends at the first headword line that carries a pronunciation (e.g. "0 \0\ adj.").
        m = re.search(r"^[^\s\\][^\\\n]*\\[^\\\n]+\\", text, re.M)
        text = text[m.start():] if m else ""
    text = SOURCE_TAG.sub("", text)
    text = re.sub(r"[ \t]*\\[^\\]{0,160}\\", "", text)   # pronunciations (some wrap onto the next line)
    text = text.replace("\\", "")                           # the few unpaired ones
    for _ in range(3):                                  # {cross reference}, {{nested}}, wrapped
        text = re.sub(r"\{([^{}]{0,300})\}", r"\1", text)
    text = DIACRITIC.sub(_diacritic, text)
    out = []
    for p in paragraphs(text):
        joined = " ".join(l.strip() for l in p.split("\n") if l.strip())
        joined = re.sub(r"\s+([,;:.])(?=\s|$)", r"\1", joined)   # "Coagulate , a." left by a pronunciation
        out.append(joined)
    return normalize("\n\n".join(out))


# ---------------------------------------------------------------------------------------------------------
# FOLDOC (dict-foldoc): dictd's plain-text .dict of the Free On-line Dictionary of Computing

# Entries that are not dictionary text: dictfmt's 00-database-* header entries, the copyright notice of the
# Debian additions (Dictionary.debian) and the entry that carries the GFDL's full text. (The header ends
# with a copy of the introduction whose headword lists every alias, "...%%%FOLDOC%%%..."; everything up to
# it is skipped. The introduction itself stays.)
FOLDOC_SKIP = re.compile(r"^(?:00-?database-|GNU Free Documentation License$|Dictionary\.debian$)")
FOLDOC_LINK = re.compile(r"\{([^{}]*?)\s*\((?:https?|ftp|news|mailto|gopher|telnet|file|wais):[^{}]*\)\}")
# The subject tag that opens a sense: "<programming>", "1. <operating system>", "<web, Java>", "<Debian>".
FOLDOC_SUBJECT = re.compile(r"^(\d+\.\s*)?<[A-Za-z][\w ,/&.+-]*>\s*")
FOLDOC_EMAIL = re.compile(r"\s*<[^<>\s]+@[^<>\s]+>")
# Paragraphs that are not prose: the date that ends each entry, a citation on its own, contact details.
FOLDOC_DROP = re.compile(r"^(?:\(\d{4}-\d\d-\d\d\)\.?|\[.*\]\.?|(?:E-mail|Address|Telephone|Fax|Mailing list):.*)$")


def _foldoc_paragraph(p):
    p = " ".join(p.split())
    p = FOLDOC_LINK.sub(r"\1", p)                  # {Ada FAQs (http://...)} -> Ada FAQs; {(ftp://...)} -> ""
    p = re.sub(r"\{([^{}]*)\}", r"\1", p)          # {cross reference}
    p = FOLDOC_EMAIL.sub("", p)
    p = FOLDOC_SUBJECT.sub(r"\1", p)
    p = re.sub(r"__(\S(?:.*?\S)?)__", r"\1", p)    # __emphasis__
    p = re.sub(r"\s*\b(?:E-mail|Address|Telephone|Fax):\s*(?:[.,;]|$)", "", p)   # a label left without its address
    p = re.sub(r"\(\s*\)|\s+(?=[,.;:)])", "", p).strip(" ,;")
    return "" if FOLDOC_DROP.match(p) or not re.search(r"[A-Za-z]", p) else p


def foldoc_entries(text):
    """The cleaned entries of dictd FOLDOC text, in order: each its headwords on a line (aliases joined by
    ", "), then its paragraphs with the hard-wrapped lines joined. Subject tags (<programming>), e-mail
    addresses, bare links ({(http://...)}), dates, citations on their own and contact details are dropped;
    link braces keep their text ({Ada Lovelace} -> Ada Lovelace, {Ada FAQs (http://...)} -> Ada FAQs);
    __emphasis__ loses its underscores; the header (up to the introduction's copy) and the licence entry are
    skipped."""
    entries = []   # [headwords, body lines]
    for line in text.split("\n"):
        if line.strip() and not line[0].isspace():
            if not entries or entries[-1][1]:
                entries.append([[], []])
            entries[-1][0].append(line.strip())
        elif entries:
            entries[-1][1].append(line)
    start = next((k + 1 for k, (heads, _) in enumerate(entries) if "%%%" in heads[0]), 0)
    for heads, body in entries[start:]:
        if FOLDOC_SKIP.match(heads[0]):
            continue
        pars = [q for q in (_foldoc_paragraph(p) for p in paragraphs("\n".join(body))) if q]
        entry = drop_legal("\n\n".join([", ".join(heads)] + pars)) if pars else ""
        if "\n\n" in entry:   # a headword with text left
            yield entry


def clean_foldoc(text):
    """dictd FOLDOC text -> its entries (foldoc_entries), separated by blank lines. Text without indented
    entry bodies (this cleaner's own output) is left as it is, which keeps the cleaner idempotent."""
    text = text.replace("\r\n", "\n")
    if not re.search(r"^[ \t]+\S", text, re.M):
        return normalize(text)
    return normalize("\n\n".join(foldoc_entries(text)))


# ---------------------------------------------------------------------------------------------------------
# reStructuredText (linux-doc, python docs)

# Directives whose body is prose we keep (dedented); the rest (code, toctrees, kernel-doc extraction,
# images, includes, indexes, tables built from files...) are dropped with their body.
KEEP_BODY = set("""note warning attention caution danger error hint important tip admonition seealso topic sidebar
only container glossary hlist table impl-detail deprecated-removed versionadded versionchanged deprecated
function method class attribute data exception decorator decoratormethod classmethod staticmethod
abstractmethod coroutinefunction coroutinemethod awaitablefunction awaitablemethod describe envvar option
cmdoption opcode pdbcommand property type macro member var struct union enum enumerator
c:function c:type c:macro c:member c:var c:struct c:union c:enum c:enumerator""".split())
# Directives whose argument is a heading or a signature worth keeping as a line of text.
KEEP_ARG = set("""admonition topic sidebar rubric function method class attribute data exception decorator
decoratormethod classmethod staticmethod abstractmethod coroutinefunction coroutinemethod awaitablefunction
awaitablemethod describe envvar option cmdoption opcode pdbcommand property type macro member var struct union
enum enumerator c:function c:type c:macro c:member c:var c:struct c:union c:enum c:enumerator""".split())
VERSION_WORDS = {"versionadded": "New in version %s.", "versionchanged": "Changed in version %s:",
                 "deprecated": "Deprecated since version %s:"}
META_FIELDS = re.compile(r"^:(?:Copyright|Licen[cs]e|Authors?|Date|Version|Revision|Updated|Last updated|"
                         r"Maintainers?|Contact|E-?mail|Organization|Status|Release|Original|Translator|"
                         r"Manual section|Manual group|Abstract|Audience|synopsis|platform|Source code):", re.I)
ADORNMENT = re.compile(r"^\s*([=\-~^\"'`*+#:.<>_])\1{2,}\s*$")
TABLE_RULE = re.compile(r"^\s*(?:\+[-=+:]+\+|=+(?:\s+=+)+|-+(?:\s+-+)+)\s*$")
ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`]*)`")


def _indent(line):
    return len(line) - len(line.lstrip(" \t"))


def _role_text(m):
    inner = m.group(1).replace("\\ ", "")
    t = re.match(r"(.*?)\s*<[^<>]*>$", inner, re.S)
    if t and t.group(1):
        return t.group(1)
    inner = inner.lstrip("!")
    if inner.startswith("~"):
        inner = inner[1:].rsplit(".", 1)[-1]
    return inner


def rst_inline(line):
    """Inline markup in text (roles may span lines) -> its text: roles, ``literals``, `links <url>`_, *emphasis*, **strong**, footnote
    references, escaped spaces."""
    line = ROLE.sub(_role_text, line.replace("\\ ", ""))
    line = re.sub(r"``(.+?)``", r"\1", line)
    line = re.sub(r"`([^`<]*?)\s*<[^`>]*>`__?", lambda m: m.group(1) or "", line)
    line = re.sub(r"`([^`]+)`__?", r"\1", line)
    line = re.sub(r"(?<![\w`])`([^`]+)`(?![\w`])", r"\1", line)
    line = re.sub(r"\s*\[(?:\d+|#[\w-]*|\*)\]_", "", line)
    line = re.sub(r"(?<![\w*\\])\*\*(\S(?:.*?\S)?)\*\*(?![\w*])", r"\1", line)
    line = re.sub(r"(?<![\w*\\])\*([^\s*](?:[^*]*?[^\s*\\])?)\*(?![\w*])", r"\1", line)
    line = re.sub(r"(?<![\w|])\|([\w -]+)\|(?![\w|])", r"\1", line)   # |substitution|
    # Named hyperlink references ("see Foo_"), on lines without snake_case names that could end in "_".
    return "\n".join(re.sub(r"(?<=[A-Za-z0-9])_(?=[\s.,;:)]|$)", "", l) if not re.search(r"\w_\w", l) else l
                     for l in line.split("\n"))


def _block_end(lines, i, base):
    """Index just past the indented block that follows line i-1 (lines blank or indented more than base)."""
    n = len(lines)
    j = i
    while j < n and (not lines[j].strip() or _indent(lines[j]) > base):
        j += 1
    while j > i and not lines[j - 1].strip():   # leave trailing blank lines outside the block
        j -= 1
    return j


def _dedent(block):
    ind = min((_indent(l) for l in block if l.strip()), default=0)
    return [l[ind:] if l.strip() else "" for l in block]


def rst_lines(lines):
    """Cleans a list of RST lines (recursive for directive bodies); returns the kept lines."""
    out, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        ind = _indent(line)
        if s.startswith(".. ") or s == "..":
            end = _block_end(lines, i + 1, ind)
            m = re.match(r"\.\.\s+([\w:-]+)::\s*(.*)$", s)
            if m and m.group(1) in KEEP_BODY | KEEP_ARG | set(VERSION_WORDS) | {"rubric"}:
                name, arg = m.group(1), m.group(2).strip()
                body = lines[i + 1:end]
                # Option lines (":maxdepth: 2") and signature continuations come first in the body.
                k = 0
                while k < len(body) and re.match(r"^\s*:[\w -]+:", body[k]):
                    k += 1
                body = body[k:]
                if name in VERSION_WORDS:
                    ver = arg.split()[0] if arg else ""
                    rest = " ".join(arg.split()[1:])
                    out.append(VERSION_WORDS[name] % ver + (" " + rest if rest else ""))
                elif name in KEEP_ARG and arg:
                    out.append(arg)
                kept = rst_lines(_dedent(body))
                if kept:
                    if name in KEEP_ARG:
                        out.append("")
                    out.extend(kept)
                out.append("")
            i = end
            continue
        if s == "::":
            i = _block_end(lines, i + 1, ind)
            continue
        if ADORNMENT.match(line) or TABLE_RULE.match(line):
            i += 1
            continue
        if META_FIELDS.match(s):
            i = _block_end(lines, i + 1, ind)
            continue
        if s.startswith(">>>"):
            while i < n and lines[i].strip():
                i += 1
            continue
        if s.endswith("::") and not s.startswith(":"):
            text = line.rstrip()[:-2].rstrip()
            text = text + ":" if text and not text.endswith(":") else text
            if text.strip():
                out.append(text)
            i = _block_end(lines, i + 1, ind)   # the literal block that follows
            continue
        out.append(line.rstrip())
        i += 1
    return out


def clean_rst(text):
    """reStructuredText -> prose: comments (SPDX and licence headers among them), targets, substitution
    definitions, code and literal blocks, doctests, tables' rules, title adornments and metadata fields
    are dropped; admonition and API-description bodies are kept dedented; inline markup becomes its text;
    licence paragraphs and copyright lines are dropped."""
    text = text.replace("\r\n", "\n").replace("\t", "        ")
    kept = rst_lines(text.split("\n"))
    return normalize(drop_legal(rst_inline("\n".join(kept))))


def clean_pydoc(text):
    """Python's .rst.txt sources: the same cleaner (they are Sphinx reStructuredText)."""
    return clean_rst(text)


# ---------------------------------------------------------------------------------------------------------
# POD (perl-doc): Perl's Plain Old Documentation

POD_CODES = "IBCFSLXZE"
POD_CLOSE = re.compile(">")
# Sections that are metadata or lists of other pages, not prose: who wrote it, its licence, where to look next.
POD_DROP_SECTION = re.compile(r"^(?:AUTHORS?|MAINTAINERS?|COPYRIGHT|LICEN[CS]E|COPYRIGHT AND LICEN[CS]E|"
                              r"AUTHORS? AND COPYRIGHT|SEE ALSO)\b", re.I)


def _pod_code(letter, inner):
    """The text a formatting code stands for: X<index> and Z<> are nothing, E<gt> is ">", L<text|target>
    is "text" and L<page/"section"> is "section in page"; the others (I B C F S) are their content."""
    if letter in "XZ":
        return ""
    if letter == "E":
        name = inner.strip()
        if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", name):
            return chr(int(name, 0) if name.startswith("0x") else int(name))
        return {"verbar": "|", "sol": "/", "lchevron": "«", "rchevron": "»"}.get(name) or \
            html.unescape("&%s;" % name)
    if letter == "L":
        if "|" in inner:
            return inner.split("|", 1)[0]
        page, _, section = inner.partition("/")
        section = section.strip('"')
        if section and page and "://" not in inner:
            return "%s in %s" % (section, page)
        return section or page
    return inner


def pod_inline(s):
    """Formatting codes -> their text, nested ones too: C<x>, and C<< x >> with any number of brackets
    (closed by whitespace and as many >); a code that is never closed is left as it is."""
    def parse(i, closer):
        # Text from s[i] up to closer (a regex; None: the end) -> (text, index past the closer), or
        # (text, None) when the closer never comes.
        out = []
        while i < len(s):
            m = closer.match(s, i) if closer else None
            if m:
                return "".join(out), m.end()
            if s[i] in POD_CODES and s.startswith("<", i + 1):
                n = len(s) - (i + 1) - len(s[i + 1:].lstrip("<"))
                multi = n > 1 and s[i + 1 + n:i + 2 + n].isspace()
                start, close = (i + 1 + n, re.compile(r"\s+" + ">" * n)) if multi else (i + 2, POD_CLOSE)
                inner, j = parse(start, close)
                if j is not None:
                    out.append(_pod_code(s[i], inner.strip() if multi else inner))
                    i = j
                    continue
            out.append(s[i])
            i += 1
        return "".join(out), (None if closer else i)
    return parse(0, None)[0]


def clean_pod(text):
    """POD -> prose: command paragraphs (=over, =back, =pod, =cut, =encoding, =for, =begin..=end regions)
    are dropped, =head and =item keep their text, verbatim (indented) paragraphs are code and are dropped,
    formatting codes become their text; AUTHOR, COPYRIGHT, LICENSE and SEE ALSO sections are dropped, and
    so are licence paragraphs and copyright lines. Text without any POD command (this cleaner's own output)
    is left as it is, which keeps the cleaner idempotent."""
    text = text.replace("\r\n", "\n")
    first = re.search(r"^=[a-zA-Z]", text, re.M)
    if not first:   # not a POD document (this cleaner's own output): keep it
        return normalize(text)
    text = text[first.start():]   # what comes before the first command is not POD (perlapi's editor line)
    out, region, drop_level, after_cut = [], None, None, False
    for p in re.split(r"\n(?:[ \t]*\n)+", "\n" + text):
        p = p.strip("\n")
        if not p.strip():
            continue
        m = re.match(r"=(\w+)[ \t]*(.*)", p, re.S)
        if region:
            if m and m.group(1) == "end" and m.group(2).split()[:1] == [region]:
                region = None
            continue
        if after_cut and not m:
            continue
        after_cut = False
        if m:
            cmd, arg = m.group(1), " ".join(m.group(2).split())
            if cmd == "begin":
                region = (arg.split() or [""])[0]
            elif cmd == "cut":
                after_cut = True
            elif cmd.startswith("head") and cmd[4:].isdigit():
                level = int(cmd[4:])
                if drop_level is not None and level <= drop_level:
                    drop_level = None
                if drop_level is None and POD_DROP_SECTION.match(arg):
                    drop_level = level
                elif drop_level is None and arg:
                    out.append(pod_inline(arg).rstrip())
            elif cmd == "item" and drop_level is None:
                item = re.sub(r"^(?:\*|\d+\.?)(?:\s+|$)", "", arg)
                if item:
                    out.append(pod_inline(item).rstrip())
            continue
        if drop_level is not None or p[0] in " \t":
            continue
        out.append(pod_inline(p).rstrip())
    return normalize(drop_legal("\n\n".join(out)))


# ---------------------------------------------------------------------------------------------------------
# HTML manuals (postgresql-doc, sqlite-doc, django-doc, git-doc)

# Elements that are never prose: code and synopses (<pre>), diagrams, scripts, forms, navigation.
HTML_DROP_TAGS = {"head", "script", "style", "pre", "svg", "nav", "aside", "form", "select", "button", "noscript"}
# Navigation, tables of contents, footers and permalink marks, by class or id: PostgreSQL's DocBook pages
# (navheader, navfooter, toc, the index's indexdiv), SQLite's site (nosearch: the menu bar and the title
# block; fancy_toc: the page's table of contents), Django's Sphinx theme (hd, ft, global-nav, sidebar, nav,
# headerlink: the "¶" after each heading) and git's AsciiDoc pages (footer: "Last updated ...").
HTML_DROP_CLASSES = {"navheader", "navfooter", "toc", "indexdiv", "nosearch", "fancy_toc", "nav", "headerlink"}
HTML_DROP_IDS = {"hd", "ft", "global-nav", "sidebar", "searchbox", "footer"}
# Blocks that are page furniture: a lone "name:" label that introduced something dropped (SQLite's syntax
# diagrams: "column-def:") and SQLite's footer ("This page last modified on 2022-12-14 11:53:20 UTC").
HTML_DROP_BLOCK = re.compile(r"[\w-]+:$|This page last modified on [\d-]+ [\d:]+ UTC$")
HTML_BLOCKS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th", "h1", "h2", "h3", "h4",
               "h5", "h6", "blockquote", "section", "article", "body", "br", "hr", "caption", "figure"}
HTML_VOID = {"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source"}


class _HtmlText(htmlparser.HTMLParser):
    """Collects the text of an HTML page as blocks (paragraphs), skipping dropped elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.cur, self.open, self.dropping = [], [], [], 0

    def _break(self):
        t = " ".join("".join(self.cur).split())
        if t and not HTML_DROP_BLOCK.match(t):
            self.blocks.append(t)
        self.cur = []

    def handle_starttag(self, tag, attrs):
        if tag in HTML_BLOCKS and not self.dropping:
            self._break()
        if tag in HTML_VOID:
            return
        attrs = dict(attrs)
        drop = (tag in HTML_DROP_TAGS or attrs.get("id") in HTML_DROP_IDS or
                not HTML_DROP_CLASSES.isdisjoint((attrs.get("class") or "").split()))
        self.open.append((tag, drop))
        self.dropping += drop

    def handle_startendtag(self, tag, attrs):
        if tag in HTML_BLOCKS and not self.dropping:
            self._break()

    def handle_endtag(self, tag):
        if not any(t == tag for t, _ in self.open):   # a stray end tag
            return
        while self.open:
            t, drop = self.open.pop()
            self.dropping -= drop
            if t == tag:
                break
        if tag in HTML_BLOCKS and not self.dropping:
            self._break()

    def handle_data(self, data):
        if not self.dropping:
            self.cur.append(data)

    def close(self):
        super().close()
        self._break()


def clean_html(text):
    """An HTML page -> its prose, one paragraph per block element (headings, paragraphs, list items, table
    cells), whitespace collapsed, entities decoded; code (<pre>), diagrams, scripts, navigation bars and
    tables of contents are dropped, and so are licence paragraphs and copyright lines. Text that does not
    start with markup (this cleaner's own output) is left as it is, which keeps the cleaner idempotent."""
    if not re.match(r"\s*<[!?a-zA-Z]", text):   # not a page that starts with markup: this cleaner's output
        return normalize(text)
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    return normalize(drop_legal("\n\n".join(parser.blocks)))


CLEANERS = {"gcide": clean_gcide, "foldoc": clean_foldoc, "rst": clean_rst, "pydoc": clean_pydoc, "pod": clean_pod,
            "html": clean_html}

# ---------------------------------------------------------------------------------------------------------
# The whole mixture

# Files that are legal text, machine lists, indexes or tables of contents, not documentation (paths relative
# to the source's directory, regular expressions); the reasons are in docs/DATA.md.
LINUX_SKIP = re.compile(r"^(?:translations/|ABI/|devicetree/bindings/|.*/(?:license|licensing|COPYING)|process/license-rules)", re.I)
PYDOC_SKIP = re.compile(r"^(?:license|copyright|contents|whatsnew/changelog|includes/)")
PERL_SKIP = re.compile(r"^(?:perltoc|perluniprops|perlartistic|perlgpl|perlpod|perlpodspec|perlpodstyle)\.pod$")
POSTGRES_SKIP = re.compile(r"^(?:bookindex|legalnotice|index|sql-keywords-appendix|errcodes-appendix|"
                           r"(?:unsupported-)?features-sql-standard)\.html$")
SQLITE_SKIP = re.compile(r"^(?:requirements|doc_\w+_crossref|capi3ref|changes|copyright(?:-release)?|index|docs|doclist|"
                         r"sitemap|keyword_index)\.html$")
DJANGO_SKIP = re.compile(r"^(?:_modules/|genindex|py-modindex|search|contents|index)")
GIT_SKIP = re.compile(r"^index\.html$")   # a copy of git.html

# The sources read from a directory of files: file suffix, files skipped, cleaner. One document per file.
FILE_SOURCES = {
    "linux-doc": (".rst.gz", LINUX_SKIP, clean_rst),
    "python-doc": (".rst.txt", PYDOC_SKIP, clean_pydoc),
    "perl-doc": (".pod", PERL_SKIP, clean_pod),
    "postgresql-doc": (".html", POSTGRES_SKIP, clean_html),
    "sqlite-doc": (".html", SQLITE_SKIP, clean_html),
    "django-doc": (".html", DJANGO_SKIP, clean_html),
    "git-doc": (".html", GIT_SKIP, clean_html),
}
# The mixture's sources in dedup order (a paragraph repeated across sources is kept in the first): the
# default corpus's two (fetch-data's by-source files, with its split), then the Debian packages'.
CORPUS_SOURCES = ["gutenberg", "sotu"]
PACKAGE_SOURCES = ["gcide"] + list(FILE_SOURCES) + ["foldoc"]   # foldoc last: added after the others


def split_val(name, percent=5):
    """A document's split by a hash of its name: about percent% validation, stable across runs."""
    h = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
    return "val" if h % 100 < percent else "train"


def read_docs(kind, path):
    """(name, cleaned text) of each document of a source."""
    if kind in ("gcide", "foldoc"):
        raw = gzip.open(path).read() if path.endswith(".dz") or path.endswith(".gz") else open(path, "rb").read()
        text = raw.decode("utf-8", "replace").replace("\ufffd", "")
        # Documents of about 64 KB of whole entries, in dictionary order: GCIDE's paragraphs, cut where one
        # that does not continue an entry ends; FOLDOC's entries.
        if kind == "gcide":
            units = paragraphs(clean_gcide(text))
            cut_after = [re.match(r"^[^\s]", p) and not p.startswith(("Syn:", "Note:")) for p in units]
        else:
            units = list(foldoc_entries(text.replace("\r\n", "\n")))
            cut_after = [True] * len(units)
        docs, cur, size = [], [], 0
        for p, cut in zip(units, cut_after):
            cur.append(p)
            size += len(p) + 2
            if size >= 65536 and cut:
                docs.append(cur)
                cur, size = [], 0
        if cur:
            docs.append(cur)
        for k, d in enumerate(docs):
            yield "%s-%04d" % (kind, k), "\n\n".join(d) + "\n"
        return
    suffix, skip, clean = FILE_SOURCES[kind]
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(suffix):
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, path)
            if skip.match(rel):
                continue
            raw = gzip.open(full).read() if suffix.endswith(".gz") else open(full, "rb").read()
            yield rel, clean(raw.decode("utf-8", "replace"))


def read_corpus(path):
    """Documents of a corpus file (each followed by a "<|endoftext|>" line)."""
    text = open(path, encoding="utf-8").read()
    return [d for d in re.split(r"^" + re.escape(DELIM) + r"\n", text, flags=re.M) if d.strip()]


def build(args):
    out, stats = args["out"], []
    os.makedirs(out, exist_ok=True)
    seen_docs, seen_pars = set(), set()
    manifest = []
    sources = []
    # The npm sources keep fetch-data's split (whole books, speeches from 2001 on).
    for src in CORPUS_SOURCES:
        docs = []
        for split in ("train", "val"):
            p = os.path.join(args["by-source"], "%s.%s.txt" % (src, split))
            docs += [("%s-%s-%d" % (src, split, k), d, split) for k, d in enumerate(read_corpus(p))]
        sources.append((src, docs))
    for src in PACKAGE_SOURCES:
        sources.append((src, [(name, text, split_val(name)) for name, text in read_docs(src, args[src])]))
    for src, docs in sources:
        st = {"source": src, "docs": 0, "bytes_in": 0, "dup_docs": 0, "dup_pars": 0, "dup_bytes": 0, "short": 0}
        files = {s: open(os.path.join(out, "%s.%s.txt.part" % (src, s)), "w", encoding="utf-8") for s in ("train", "val")}
        size = {"train": 0, "val": 0}
        for name, text, split in docs:
            st["bytes_in"] += len(text.encode())
            h = hashlib.sha256(text.encode()).digest()
            if h in seen_docs:
                st["dup_docs"] += 1
                continue
            seen_docs.add(h)
            # Paragraph-level dedupe across the whole mixture: boilerplate repeated verbatim (long enough
            # not to be a common short line such as "Example:").
            kept = []
            for p in paragraphs(text):
                if len(p) >= 120:
                    ph = hashlib.sha256(p.encode()).digest()
                    if ph in seen_pars:
                        st["dup_pars"] += 1
                        st["dup_bytes"] += len(p.encode())
                        continue
                    seen_pars.add(ph)
                kept.append(p)
            body = "\n\n".join(kept).strip()
            if len(body) < 200:   # stubs left after cleaning (index pages, toctree-only files)
                st["short"] += 1
                continue
            if DELIM in body:
                body = body.replace(DELIM, "<|endoftext |>")
            files[split].write(body + "\n" + DELIM + "\n")
            size[split] += len(body.encode()) + 1
            st["docs"] += 1
            manifest.append("%s\t%s\t%s" % (split, src, name))
        for s, f in files.items():
            f.close()
            os.replace(f.name, f.name[:-5])
        st.update(train_bytes=size["train"], val_bytes=size["val"])
        stats.append(st)
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    with open(os.path.join(out, "STATS"), "w") as f:
        cols = ["source", "docs", "bytes_in", "train_bytes", "val_bytes", "dup_docs", "dup_pars", "dup_bytes", "short"]
        f.write("\t".join(cols) + "\n")
        for st in stats:
            f.write("\t".join(str(st[c]) for c in cols) + "\n")
    for st in stats:
        print("mixture: %-14s %5d docs, %6.1f MB train, %5.1f MB val (%d duplicate docs, %d duplicate paragraphs "
              "= %.1f MB, %d stubs dropped)" % (st["source"], st["docs"], st["train_bytes"] / 1e6,
                                                st["val_bytes"] / 1e6, st["dup_docs"], st["dup_pars"],
                                                st["dup_bytes"] / 1e6, st["short"]), file=sys.stderr)


def main(argv):
    if len(argv) >= 2 and argv[0] == "clean" and argv[1] in CLEANERS:
        data = open(argv[2], "rb").read() if len(argv) > 2 and argv[2] != "-" else sys.stdin.buffer.read()
        sys.stdout.write(CLEANERS[argv[1]](data.decode("utf-8", "replace")))
        return 0
    if argv and argv[0] == "build":
        args, rest = {}, argv[1:]
        while len(rest) >= 2 and rest[0].startswith("--"):
            args[rest[0][2:]] = rest[1]
            rest = rest[2:]
        need = ["out", "by-source"] + PACKAGE_SOURCES
        missing = [k for k in need if k not in args]
        if rest or missing:
            print("mixture_clean build: missing --%s" % " --".join(missing) if missing else
                  "mixture_clean build: unexpected %s" % rest[0], file=sys.stderr)
            return 2
        build(args)
        return 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
