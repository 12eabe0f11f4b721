// status: error codes and messages for everything the environment can get wrong (bad file, bad flag,
// out of memory). Library code returns an sx_status and records a one-line message with sx_fail();
// only the command-line edge prints it and exits. Programmer errors are SX_CHECKs, not statuses.
#ifndef SEXTANT_CORE_STATUS_H
#define SEXTANT_CORE_STATUS_H
#include <stddef.h>

typedef enum {
    SX_OK = 0,
    SX_ERR_ARG,      // bad flag, descriptor or configuration
    SX_ERR_IO,       // open/read/write/fsync/rename failed
    SX_ERR_FORMAT,   // a file is not what it claims: magic, version, truncation, checksum, sizes
    SX_ERR_MISMATCH, // a valid file that does not fit: checkpoint of another model, vocab mismatch
    SX_ERR_NOMEM,    // allocation failed
    SX_ERR_NUMERIC,  // non-finite loss or gradients
    SX_ERR_INTERRUPTED,
} sx_status;

// Records a formatted message for the current thread and returns st (so `return sx_fail(...)` works).
sx_status sx_fail(sx_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The last recorded message ("" if none).
const char *sx_last_error(void);
// A short name for a status ("bad argument", "I/O error", ...).
const char *sx_status_name(sx_status st);

// The one allocation entry point (SQLite's habit): sx_alloc and the functions below it record SX_ERR_NOMEM
// with the size and purpose when they fail, and all of them go through one counter, so that a test can make
// the k-th allocation fail (sx_alloc_fail_at, or SEXTANT_FAIL_ALLOC_AT=k in the environment, read at the
// first allocation) and check that every failure ends in a clean error. Free with sx_free (or free).
// 64-byte aligned; blocks of 4 MiB and more as sx_alloc_huge.
void *sx_alloc(size_t bytes, const char *what);
// realloc (p may be NULL; on failure p is left as it was) and strdup through the same entry point.
void *sx_realloc(void *p, size_t bytes, const char *what);
char *sx_strdup(const char *s, const char *what);
// Resizes the parallel arrays of one table (its columns) to cap rows each: cols[i] is the address of the
// i-th array's pointer (e.g. &t->loss), sizes[i] the bytes of one of its rows. Every column is attempted;
// those that could not grow keep their old block, and the status is then SX_ERR_NOMEM with what failed, so
// the caller keeps its old capacity and frees the columns as usual.
sx_status sx_grow_columns(void *const *cols, const size_t *sizes, size_t n, size_t cap, const char *what);
// Test hook: the k-th allocation from now fails (k <= 0: none). Counts every thread's allocations.
void sx_alloc_fail_at(long k);
// Allocations made so far through this entry point.
long sx_alloc_count(void);
// Failed allocations so far, on any thread. Code that cannot return a status (a kernel inside a parallel
// region) skips its work when its scratch is missing; its caller takes n = sx_alloc_failures() before and
// sx_alloc_check(n) after, which is SX_ERR_NOMEM with the failure's message if any allocation failed since.
long sx_alloc_failures(void);
sx_status sx_alloc_check(long since);
// SX_HUGE_PAGE aligned, rounded up to whole huge pages and advised to use transparent huge pages: for
// buffers of any size that the kernels stream through.
#define SX_HUGE_PAGE ((size_t)2 << 20)
void *sx_alloc_huge(size_t bytes, const char *what);
void *sx_calloc(size_t bytes, const char *what);
// n x size zeroed bytes (calloc's shape), the product checked for overflow.
void *sx_calloc_n(size_t n, size_t size, const char *what);
void sx_free(void *p);
// Checked size arithmetic: returns 0 and records SX_ERR_ARG on overflow.
int sx_mul_size(size_t a, size_t b, size_t *out);

// Always-on check of a programmer error (never of anything a file, a flag or the machine can cause: those
// return a status). On failure prints file:line, the condition and what to do about it, and aborts:
//   SX_CHECK(n <= cap, "call kvcache_reserve with the longest sequence first");
#define SX_CHECK(cond, what_to_do) ((cond) ? (void)0 : sx_check_failed(__FILE__, __LINE__, #cond, what_to_do))
_Noreturn void sx_check_failed(const char *file, int line, const char *cond, const char *what_to_do);

#endif
