#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include "core/status.h"

static _Thread_local char last_error[512];

sx_status sx_fail(sx_status st, const char *fmt, ...) {
    // Formatted aside first: callers wrap the last message in a new one (sx_fail(st, "run %s: %s", dir,
    // sx_last_error())), and vsnprintf into its own argument would overwrite it while reading it.
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof msg);
    return st;
}

const char *sx_last_error(void) { return last_error; }

const char *sx_status_name(sx_status st) {
    switch (st) {
    case SX_OK: return "ok";
    case SX_ERR_ARG: return "bad argument";
    case SX_ERR_IO: return "I/O error";
    case SX_ERR_FORMAT: return "bad file";
    case SX_ERR_MISMATCH: return "mismatch";
    case SX_ERR_NOMEM: return "out of memory";
    case SX_ERR_NUMERIC: return "numerical failure";
    case SX_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown error";
}

static _Atomic long alloc_count, alloc_fail_at = -1;   // -1: the environment not read yet

void sx_alloc_fail_at(long k) { alloc_fail_at = k > 0 ? alloc_count + k : 0; }

long sx_alloc_count(void) { return alloc_count; }

static const char *_Atomic injected_what;   // the purpose of the allocation the hook failed

// SEXTANT_ALLOC_COUNT=PATH: the number of allocations is written to PATH at exit (tests size their sweep),
// and on a second line the purpose of the one the hook failed.
static void write_count(void) {
    FILE *f = fopen(getenv("SEXTANT_ALLOC_COUNT"), "w");
    if (!f) return;
    fprintf(f, "%ld\n", (long)alloc_count);
    if (injected_what) fprintf(f, "%s\n", injected_what);
    fclose(f);
}

// Counts an allocation; true when the fault-injection hook says this one fails.
static bool injected_failure(void) {
    if (alloc_fail_at < 0) {
        const char *env = getenv("SEXTANT_FAIL_ALLOC_AT");
        long k = env ? atol(env) : 0;
        long unset = -1;
        if (atomic_compare_exchange_strong(&alloc_fail_at, &unset, k > 0 ? k : 0) && getenv("SEXTANT_ALLOC_COUNT"))
            atexit(write_count);
    }
    long n = ++alloc_count;
    return alloc_fail_at > 0 && n == alloc_fail_at;
}

static bool injected(const char *what) {
    if (!injected_failure()) return false;
    injected_what = what;
    return true;
}

static _Atomic long alloc_failures;
static char failure_msg[512];        // the latest failure, for a check made on another thread
static atomic_flag failure_msg_busy = ATOMIC_FLAG_INIT;

static void *nomem(size_t bytes, const char *what) {
    sx_fail(SX_ERR_NOMEM, "cannot allocate %zu bytes for %s", bytes, what);
    if (!atomic_flag_test_and_set(&failure_msg_busy)) {
        snprintf(failure_msg, sizeof failure_msg, "%s", sx_last_error());
        atomic_flag_clear(&failure_msg_busy);
    }
    alloc_failures++;
    return NULL;
}

long sx_alloc_failures(void) { return alloc_failures; }

sx_status sx_alloc_check(long since) {
    if (alloc_failures == since) return SX_OK;
    char msg[512];
    while (atomic_flag_test_and_set(&failure_msg_busy)) {}
    snprintf(msg, sizeof msg, "%s", failure_msg);
    atomic_flag_clear(&failure_msg_busy);
    return sx_fail(SX_ERR_NOMEM, "%s", msg);
}

// A block rounded up to a multiple of align and aligned to it (64, or SX_HUGE_PAGE with the huge-page advice).
static void *alloc_aligned(size_t bytes, size_t align, const char *what) {
    void *p = NULL;
    const size_t rounded = (bytes + align - 1) & ~(align - 1);
    if (injected(what) || rounded < bytes || posix_memalign(&p, align, rounded ? rounded : 64) != 0)
        return nomem(bytes, what);
    if (align == SX_HUGE_PAGE) madvise(p, rounded, MADV_HUGEPAGE); // advice only: failure means 4 KiB pages
    return p;
}

// Large blocks (the model's arena, activations, optimizer state) get huge pages. The kernels stream through
// them, and on a virtual machine every TLB miss is a two-level page walk: with 4 KiB pages d6 trains 9%
// (fp32) to 13% (bf16) slower.
void *sx_alloc(size_t bytes, const char *what) {
    return alloc_aligned(bytes, bytes >= 2 * SX_HUGE_PAGE ? SX_HUGE_PAGE : 64, what);
}

void *sx_alloc_huge(size_t bytes, const char *what) { return alloc_aligned(bytes, SX_HUGE_PAGE, what); }

void *sx_calloc(size_t bytes, const char *what) {
    void *p = sx_alloc(bytes, what);
    if (p) memset(p, 0, bytes);
    return p;
}

void *sx_calloc_n(size_t n, size_t size, const char *what) {
    size_t bytes;
    return sx_mul_size(n, size, &bytes) ? sx_calloc(bytes, what) : NULL;
}

void *sx_realloc(void *p, size_t bytes, const char *what) {
    void *q = injected(what) ? NULL : realloc(p, bytes ? bytes : 1);
    return q ? q : nomem(bytes, what);
}

char *sx_strdup(const char *s, const char *what) {
    size_t n = strlen(s) + 1;
    char *c = injected(what) ? NULL : malloc(n);
    if (!c) return nomem(n, what);
    memcpy(c, s, n);
    return c;
}

sx_status sx_grow_columns(void *const *cols, const size_t *sizes, size_t n, size_t cap, const char *what) {
    sx_status st = SX_OK;
    for (size_t i = 0; i < n; i++) {
        void **col = (void **)cols[i];
        size_t bytes;
        void *grown = sx_mul_size(cap, sizes[i], &bytes) ? sx_realloc(*col, bytes, what) : NULL;
        if (grown) *col = grown;
        else st = SX_ERR_NOMEM;   // sx_realloc or sx_mul_size recorded why
    }
    return st;
}

void sx_free(void *p) { free(p); }

_Noreturn void sx_check_failed(const char *file, int line, const char *cond, const char *what_to_do) {
    fprintf(stderr, "sextant: internal error at %s:%d: %s does not hold: %s\n", file, line, cond, what_to_do);
    fflush(stderr);
    abort();
}

int sx_mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) {
        sx_fail(SX_ERR_ARG, "size overflow: %zu x %zu", a, b);
        return 0;
    }
    *out = a * b;
    return 1;
}
