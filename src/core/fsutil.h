// fsutil: small filesystem helpers shared by the trainer, the ladder and the CLI.
#ifndef SEXTANT_CORE_FSUTIL_H
#define SEXTANT_CORE_FSUTIL_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

// Creates dir and its missing parents (like mkdir -p).
sx_status fs_mkdir_p(const char *dir);

// Takes an exclusive lock on dir (a .lock file in it, held until *fd is closed or the process dies), or
// fails naming the directory when another process holds it: two writers would interleave checkpoints.
sx_status fs_lock_dir(const char *dir, int *fd);

// Removes the temporary files an interrupted atomic write left in dir ("NAME.tmpPID"). Only safe while
// holding dir's lock.
void fs_remove_stale_tmp(const char *dir);

// Writes path atomically: fill(f, arg) writes a temporary file in the same directory, which is flushed,
// fsynced and renamed over path (then the directory is fsynced). On any failure the old file is untouched
// and the temporary removed. fill returns false on a write error.
sx_status fs_write_atomic(const char *path, bool (*fill)(FILE *f, void *arg), void *arg);
// n bytes of data written by fs_write_atomic.
sx_status fs_write_bytes(const char *path, const void *data, size_t n);
// A document drawn into memory first (open_memstream) and written by fs_write_atomic: for writers that
// stream their output (HTML, SVG) and may fail midway with a status of their own.
typedef struct {
    FILE *f;     // where the writer draws; NULL when fs_buffer_open failed
    char *data;
    size_t len;
} fs_buffer;
// Opens b->f for writing; SX_ERR_NOMEM when it cannot.
sx_status fs_buffer_open(fs_buffer *b);
// Closes b and, when st is SX_OK, writes what was drawn to path atomically; returns st or the write's status.
sx_status fs_buffer_commit(fs_buffer *b, const char *path, sx_status st);
// A JSON document written by fs_write_atomic (jansson's json_dumpf flags, then a newline): an interrupted or
// failed write leaves the old file, never a truncated one.
sx_status fs_write_json(const char *path, const json_t *doc, size_t flags);
// Reads a JSON document: *out (the caller's reference) or a status whose message names the file, and the
// line and column only when the problem is inside it ("cannot open runs/x/fit.json (No such file or
// directory)", "fit.json:3: ...").
sx_status fs_load_json(const char *path, json_t **out);
// Reads a JSON document whose "format" and "version" must be these, where the file exists: *out (the caller's
// reference), or NULL without the file. SX_ERR_FORMAT for another format or version, naming the file and
// what it should be (noun: "seeds file" gives "PATH: not a seeds file of version 1 (format \"...\")").
sx_status fs_load_versioned_json(const char *path, const char *format, int version, const char *noun, json_t **out);
// The same for a reader of versions 1..version (a format that grew a field): the version read into *read_version.
sx_status fs_load_json_upto(const char *path, const char *format, int version, const char *noun, json_t **out,
                            int *read_version);

// The SHA-256 of a file's bytes as 64 lowercase hex digits (hex: 65 bytes with the terminator).
sx_status fs_sha256_file(const char *path, char hex[65]);

#endif
