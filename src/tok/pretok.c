#include <string.h>
#include <utf8proc.h>
#include "tok/pretok.h"

// Character class bits.
enum {
    C_L = 1,       // \p{L}
    C_N = 2,       // \p{N}
    C_WS = 4,      // \s (see is_white_space)
    C_CRLF = 8,    // \r or \n
    C_UP = 16,     // o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    C_LO = 32,     // o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}]
};
#define C_OTHER_MASK (C_L | C_N | C_WS) // a char with none of these is [^\s\p{L}\p{N}]

// \s as JavaScript defines it (gpt-tokenizer is the reference): Unicode White_Space without U+0085, plus
// U+FEFF. (tiktoken's Rust regex uses White_Space itself; the two differ only on those two characters.)
static int is_white_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xFEFF || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

static uint8_t class_of_codepoint(int32_t c) {
    uint8_t k = is_white_space(c) ? C_WS : 0;
    if (c == '\r' || c == '\n') k |= C_CRLF;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LT: k |= C_L | C_UP; break;
    case UTF8PROC_CATEGORY_LL: k |= C_L | C_LO; break;
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: k |= C_L | C_UP | C_LO; break;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: k |= C_UP | C_LO; break;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: k |= C_N; break;
    default: break;
    }
    return k;
}

static uint8_t ascii_class[128];
static int ascii_ready;

static void init_ascii(void) {
    for (int c = 0; c < 128; c++) ascii_class[c] = class_of_codepoint(c);
    __atomic_store_n(&ascii_ready, 1, __ATOMIC_RELEASE);
}

// Decodes the character at s[i] (i < n): sets *len to its byte length and returns its class bits.
// Invalid UTF-8 (bad lead, truncated, overlong, surrogate, > U+10FFFF) is one byte of class 0.
static inline uint8_t char_at(const uint8_t *s, size_t n, size_t i, size_t *len) {
    uint8_t b = s[i];
    if (b < 0x80) { *len = 1; return ascii_class[b]; }
    *len = 1;
    int32_t c;
    size_t need;
    if (b >= 0xC2 && b <= 0xDF) { c = b & 0x1F; need = 1; }
    else if (b >= 0xE0 && b <= 0xEF) { c = b & 0x0F; need = 2; }
    else if (b >= 0xF0 && b <= 0xF4) { c = b & 0x07; need = 3; }
    else return 0;
    if (i + need >= n) return 0;
    for (size_t k = 1; k <= need; k++) {
        uint8_t t = s[i + k];
        if ((t & 0xC0) != 0x80) return 0;
        c = (c << 6) | (t & 0x3F);
    }
    if ((need == 2 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (need == 3 && (c < 0x10000 || c > 0x10FFFF)))
        return 0;
    *len = need + 1;
    return class_of_codepoint(c);
}

static inline int is_other(uint8_t k) { return !(k & C_OTHER_MASK); }

// End of the run of chars starting at i whose class has any bit of mask; at most max_chars chars.
static size_t run(const uint8_t *s, size_t n, size_t i, uint8_t mask, size_t max_chars) {
    size_t len;
    for (size_t k = 0; i < n && k < max_chars; k++) {
        if (!(char_at(s, n, i, &len) & mask)) break;
        i += len;
    }
    return i;
}

// End of a run of [^\s\p{L}\p{N}] chars starting at i.
static size_t run_other(const uint8_t *s, size_t n, size_t i) {
    size_t len;
    while (i < n && is_other(char_at(s, n, i, &len))) i += len;
    return i;
}

// Length of a contraction at s[i] ('s 't 'm 'd 're 've 'll), 0 if none.
static size_t contraction(const uint8_t *s, size_t n, size_t i, int fold_case) {
    if (i + 1 >= n || s[i] != '\'') return 0;
    uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (fold_case) {
        if (a >= 'A' && a <= 'Z') a += 32;
        if (b >= 'A' && b <= 'Z') b += 32;
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// The whitespace alternatives shared by the patterns, at a position holding whitespace that ends at e:
// \s+(?!\S) (the run minus its last char unless it reaches the end), else the single char / whole run.
static size_t ws_tail(const uint8_t *s, size_t n, size_t p, size_t e) {
    if (e == n) return e;
    size_t last = p, i = p, len;
    while (i < e) { last = i; char_at(s, n, i, &len); i += len; }
    return last > p ? last : e;
}

// End of the last \r or \n in [p, e), or 0 if none.
static size_t last_newline_end(const uint8_t *s, size_t p, size_t e) {
    for (size_t i = e; i > p; i--)
        if (s[i - 1] == '\n' || s[i - 1] == '\r') return i;
    return 0;
}

static size_t next_gpt2(const uint8_t *s, size_t n, size_t p) {
    size_t len, len1, c = contraction(s, n, p, 0);
    if (c) return p + c;
    uint8_t k = char_at(s, n, p, &len);
    size_t q = p;
    uint8_t kq = k;
    if (s[p] == ' ' && p + 1 < n) { q = p + 1; kq = char_at(s, n, q, &len1); }
    if (kq & C_L) return run(s, n, q, C_L, SIZE_MAX);
    if (kq & C_N) return run(s, n, q, C_N, SIZE_MAX);
    if (is_other(kq) && (q > p || is_other(k))) return run_other(s, n, q);
    // Here s[p] is whitespace.
    return ws_tail(s, n, p, run(s, n, p, C_WS, SIZE_MAX));
}

static size_t next_cl100k(const uint8_t *s, size_t n, size_t p) {
    size_t len, len1, c = contraction(s, n, p, 1);
    if (c) return p + c;
    uint8_t k = char_at(s, n, p, &len);
    if (k & C_L) return run(s, n, p, C_L, SIZE_MAX);
    if (!(k & (C_CRLF | C_L | C_N)) && p + len < n && (char_at(s, n, p + len, &len1) & C_L))
        return run(s, n, p + len, C_L, SIZE_MAX);
    if (k & C_N) return run(s, n, p, C_N, 3);
    size_t q = (s[p] == ' ' && p + 1 < n && is_other(char_at(s, n, p + 1, &len1))) ? p + 1 : p;
    if (q > p || is_other(k)) return run(s, n, run_other(s, n, q), C_CRLF, SIZE_MAX);
    size_t e = run(s, n, p, C_WS, SIZE_MAX);
    if (e == n) return e;                      // \s+$
    size_t nl = last_newline_end(s, p, e);     // \s*[\r\n]
    if (nl) return nl;
    return ws_tail(s, n, p, e);                // \s+(?!\S) | \s
}

// o200k letter alternatives from start position b (the optional prefix char already consumed, or not):
// alt 1: [UP]*[LO]+, alt 2: [UP]+[LO]*. Returns the end or 0 when the alternative fails.
static size_t o200k_alt1(const uint8_t *s, size_t n, size_t b) {
    size_t u = run(s, n, b, C_UP, SIZE_MAX), len;
    if (u < n && (char_at(s, n, u, &len) & C_LO)) return run(s, n, u, C_LO, SIZE_MAX);
    // Backtrack: the last char of the [UP]* run that is also in [LO] ends the match.
    size_t i = b, end = 0;
    while (i < u) {
        uint8_t k = char_at(s, n, i, &len);
        i += len;
        if (k & C_LO) end = i;
    }
    return end;
}

static size_t o200k_alt2(const uint8_t *s, size_t n, size_t b) {
    size_t u = run(s, n, b, C_UP, SIZE_MAX);
    return u > b ? run(s, n, u, C_LO, SIZE_MAX) : 0;
}

static size_t next_o200k(const uint8_t *s, size_t n, size_t p) {
    size_t len, len1, e;
    uint8_t k = char_at(s, n, p, &len);
    int prefix = !(k & (C_CRLF | C_L | C_N));
    size_t (*alts[2])(const uint8_t *, size_t, size_t) = { o200k_alt1, o200k_alt2 };
    for (int a = 0; a < 2; a++) {
        e = (prefix && p + len < n) ? alts[a](s, n, p + len) : 0;
        if (!e) e = alts[a](s, n, p);
        if (e) return e + contraction(s, n, e, 1);
    }
    if (k & C_N) return run(s, n, p, C_N, 3);
    size_t q = (s[p] == ' ' && p + 1 < n && is_other(char_at(s, n, p + 1, &len1))) ? p + 1 : p;
    if (q > p || is_other(k)) {
        e = run_other(s, n, q);
        while (e < n && (s[e] == '\r' || s[e] == '\n' || s[e] == '/')) e++;
        return e;
    }
    e = run(s, n, p, C_WS, SIZE_MAX);
    size_t nl = last_newline_end(s, p, e);     // \s*[\r\n]+
    if (nl) return nl;
    return ws_tail(s, n, p, e);                // \s+(?!\S) | \s+
}

size_t pretok_next(pretok_kind kind, const uint8_t *s, size_t n, size_t pos) {
    if (!__atomic_load_n(&ascii_ready, __ATOMIC_ACQUIRE)) init_ascii();
    switch (kind) {
    case PRETOK_GPT2: return next_gpt2(s, n, pos);
    case PRETOK_CL100K: return next_cl100k(s, n, pos);
    case PRETOK_O200K: return next_o200k(s, n, pos);
    }
    return n;
}

static const char *const names[] = { "gpt2", "cl100k", "o200k" };

const char *pretok_name(pretok_kind kind) { return names[kind]; }

int pretok_from_name(const char *name) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}
