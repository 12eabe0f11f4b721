// tensorfile: the one self-describing binary container sextant writes (checkpoints, fixtures): magic,
// version, a JSON header (kind, free-form meta, tensor index), 64-byte aligned data, crc32, end magic.
// Layout in docs/FORMATS.md. Responsible for validation and atomic replacement on write; not for what the
// tensors mean (the model and the trainer decide that).
#ifndef SEXTANT_CORE_TENSORFILE_H
#define SEXTANT_CORE_TENSORFILE_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { TF_F32 = 0, TF_I32 = 1, TF_U8 = 2 } tf_dtype;

typedef struct {
    char name[128];
    tf_dtype dtype;
    int ndim;            // 0..4
    size_t shape[4];
    size_t nbytes;
    void *data;          // writer: caller's memory; reader: points into the file buffer
} tf_tensor;

typedef struct {
    json_t *meta;        // owned; never NULL after a successful read
    size_t n;
    tf_tensor *tensors;  // owned
    void *buf;           // owned: the whole file
    size_t buf_size;
} tensorfile;

// Writes kind, meta (borrowed; may be NULL) and n tensors to path atomically: a temporary file in the same
// directory, fsync, rename over path, fsync of the directory. On failure the old file is untouched.
sx_status tf_write(const char *path, const char *kind, json_t *meta, const tf_tensor *t, size_t n);
// Reads and validates path; kind must match when non-NULL. On success fills *out (free with tf_free).
sx_status tf_read(const char *path, const char *kind, tensorfile *out);
void tf_free(tensorfile *f);
// The tensor with this name, or NULL.
const tf_tensor *tf_find(const tensorfile *f, const char *name);
size_t tf_dtype_size(tf_dtype d);

// Test hook: when > 0, the Nth write() call made by tf_write from now fails with ENOSPC (fault injection).
extern int tf_fail_write_after;
// Test hook: when > 0, the Nth write() call made by tf_write from now says so on stderr and sleeps until the
// process is killed (ten minutes at most: a stalled disk), so that a test can kill it inside a checkpoint write.
extern int tf_stall_write_after;

#endif
