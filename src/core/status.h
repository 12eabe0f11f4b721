// status: error codes and messages for everything the environment can get wrong (bad file, bad flag,
// out of memory). Library code returns an sx_status and records a one-line message with sx_fail();
// only the command-line edge prints it and exits. Programmer errors are asserts, not statuses.
#ifndef SEXTANT_STATUS_H
#define SEXTANT_STATUS_H

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

// Allocation that records SX_ERR_NOMEM with the size and purpose when it fails. 64-byte aligned; blocks of
// 4 MiB and more as sx_alloc_huge.
void *sx_alloc(size_t bytes, const char *what);
// SX_HUGE_PAGE aligned, rounded up to whole huge pages and advised to use transparent huge pages: for
// buffers of any size that the kernels stream through.
#define SX_HUGE_PAGE ((size_t)2 << 20)
void *sx_alloc_huge(size_t bytes, const char *what);
void *sx_calloc(size_t bytes, const char *what);
void sx_free(void *p);
// Checked size arithmetic: returns 0 and records SX_ERR_ARG on overflow.
int sx_mul_size(size_t a, size_t b, size_t *out);

#endif
