#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "core/status.h"

static _Thread_local char last_error[512];

sx_status sx_fail(sx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
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

void *sx_alloc(size_t bytes, const char *what) {
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes || posix_memalign(&p, 64, rounded ? rounded : 64) != 0) {
        sx_fail(SX_ERR_NOMEM, "cannot allocate %zu bytes for %s", bytes, what);
        return NULL;
    }
    return p;
}

void *sx_calloc(size_t bytes, const char *what) {
    void *p = sx_alloc(bytes, what);
    if (p) memset(p, 0, bytes);
    return p;
}

void sx_free(void *p) { free(p); }

int sx_mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) {
        sx_fail(SX_ERR_ARG, "size overflow: %zu x %zu", a, b);
        return 0;
    }
    *out = a * b;
    return 1;
}
