// fuzz_util: helpers shared by the libFuzzer targets in tests/fuzz/. The parsers under test read files by
// path, so each input is written to a scratch file in a per-process temporary directory first.
// Not responsible for what a target checks (each fuzz_*.c decides).
#ifndef SEXTANT_FUZZ_UTIL_H
#define SEXTANT_FUZZ_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

// The scratch directory, created on first use and kept for the life of the process.
static inline const char *fuzz_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sxfuzz.XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

// Writes data[0..n) to fuzz_dir()/name and returns the full path (static buffer, one per slot 0..3).
static inline const char *fuzz_file(int slot, const char *name, const uint8_t *data, size_t n) {
    static char paths[4][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(paths[slot], "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return paths[slot];
}

// data[0..n) as a NUL-terminated string (malloc'd; embedded NULs end it early).
static inline char *fuzz_str(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = 0;
    return s;
}

// Splits data at the first occurrence of sep: [0, *n1) and [*off2, n). Without sep, all of it is part 1.
static inline void fuzz_split(const uint8_t *data, size_t n, const char *sep, size_t *n1, size_t *off2) {
    size_t k = strlen(sep);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(data + i, sep, k)) { *n1 = i; *off2 = i + k; return; }
    *n1 = n;
    *off2 = n;
}

// A malloc'd copy of data[0..n) with the little-endian crc32 of bytes [from, to) stored at offset at, so that
// mutated inputs get past checksum checks and reach the code behind them.
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    if (!c) abort();
    memcpy(c, data, n);
    return c;
}
static inline void fuzz_fix_crc(uint8_t *buf, size_t at, size_t from, size_t to) {
    uint32_t crc = (uint32_t)crc32(0, buf + from, (uInt)(to - from));
    memcpy(buf + at, &crc, 4);
}

#endif
