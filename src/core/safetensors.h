// safetensors: the Hugging Face tensor container, for models that leave sextant and come back.
// Layout: u64 (little-endian) N, then N bytes of JSON header {"__metadata__": {str: str}, NAME: {"dtype",
// "shape", "data_offsets": [begin, end]}, ...} padded with spaces to a multiple of 8, then the data (offsets
// relative to its start, row-major, little-endian). The format has no checksum of its own: sextant writes
// the crc32 of the data section into the metadata ("sextant_crc32") and checks it on read when present.
// Responsible for the container and its validation; not for what the tensors are called or mean
// (train/hf_export.h maps sextant models to Hugging Face Llama names).
#ifndef SEXTANT_CORE_SAFETENSORS_H
#define SEXTANT_CORE_SAFETENSORS_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"

#define ST_MAX_DIMS 8

typedef struct {
    char name[256];
    char dtype[8];       // "F32", "BF16", "F16", "I32", ... as written in the file
    int ndim;
    size_t shape[ST_MAX_DIMS];
    size_t nbytes;
    const void *data;    // writer: the caller's memory; reader: points into the file buffer
} st_tensor;

typedef struct {
    json_t *metadata;    // owned; an object of strings, never NULL after a successful read
    size_t n;
    st_tensor *tensors;  // owned, in data order
    void *buf;           // owned: the whole file
    size_t size;
} st_file;

// Writes the tensors in the given order (F32, BF16, F16 or I32) with metadata (borrowed, may be NULL; every
// value must be a string) plus sextant_crc32, atomically (temporary file, fsync, rename).
sx_status st_write(const char *path, const st_tensor *t, size_t n, json_t *metadata);
// Reads and validates path: header size, JSON, every dtype, shape and offset range (inside the data,
// matching the shape, not overlapping), and sextant_crc32 when present. Fills *out (free with st_free).
sx_status st_read(const char *path, st_file *out);
void st_free(st_file *f);
// The tensor with this name, or NULL.
const st_tensor *st_find(const st_file *f, const char *name);
// Bytes per element of a dtype name; 0 for one this reader does not know.
size_t st_dtype_size(const char *dtype);

#endif
