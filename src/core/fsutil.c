#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/fsutil.h"

sx_status fs_mkdir_p(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return sx_fail(SX_ERR_ARG, "path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return sx_fail(SX_ERR_IO, "%s: cannot create directory (%s)", path, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return SX_OK;
}

sx_status fs_lock_dir(const char *dir, int *fd) {
    char path[4096];
    snprintf(path, sizeof path, "%s/.lock", dir);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0) return sx_fail(SX_ERR_IO, "%s: cannot create (%s)", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return SX_OK;
    int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK) return sx_fail(SX_ERR_ARG, "%s is in use by another sextant process; wait for it or choose another --out", dir);
    return sx_fail(SX_ERR_IO, "%s: cannot lock (%s)", path, strerror(e));
}

// "NAME.tmp" followed by digits only (tensorfile's atomic-write temporaries).
static int is_stale_tmp(const char *name) {
    const char *t = strstr(name, ".tmp");
    if (!t || t == name || !t[4]) return 0;
    for (t += 4; *t; t++)
        if (*t < '0' || *t > '9') return 0;
    return 1;
}

void fs_remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[4096];
    for (struct dirent *e; (e = readdir(d));)
        if (is_stale_tmp(e->d_name) && snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) unlink(path);
    closedir(d);
}

sx_status fs_write_atomic(const char *path, bool (*fill)(FILE *f, void *arg), void *arg) {
    struct stat sb;
    size_t len = strlen(path);
    if (!len || path[len - 1] == '/' || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return sx_fail(SX_ERR_ARG, "'%s' is a directory: give the path of the file to write", path);
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return sx_fail(SX_ERR_ARG, "path too long: %s", path);
    errno = 0;
    FILE *f = fopen(tmp, "wb");
    if (!f) return sx_fail(SX_ERR_IO, "%s: cannot create (%s)", tmp, strerror(errno));
    bool ok = fill(f, arg) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) != 0) { ok = false; e = errno; }
    if (!ok) {
        unlink(tmp);
        return sx_fail(SX_ERR_IO, "%s: write failed (%s)", path, e ? strerror(e) : "short write");
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    int fd = open(slash ? (*dir ? dir : "/") : ".", O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }   // not fatal: the rename is done
    return SX_OK;
}

sx_status fs_buffer_open(fs_buffer *b) {
    b->data = NULL;
    b->len = 0;
    b->f = open_memstream(&b->data, &b->len);
    return b->f ? SX_OK : sx_fail(SX_ERR_NOMEM, "cannot open a memory stream (%s)", strerror(errno));
}

typedef struct {
    const void *data;
    size_t n;
} bytes_job;

static bool fill_bytes(FILE *f, void *arg) {
    const bytes_job *j = arg;
    return fwrite(j->data, 1, j->n, f) == j->n;
}

sx_status fs_write_bytes(const char *path, const void *data, size_t n) {
    return fs_write_atomic(path, fill_bytes, &(bytes_job){data, n});
}

sx_status fs_buffer_commit(fs_buffer *b, const char *path, sx_status st) {
    if (b->f && (fclose(b->f) || !b->data) && !st) st = sx_fail(SX_ERR_NOMEM, "%s: out of memory while drawing it", path);
    b->f = NULL;
    if (!st) st = fs_write_bytes(path, b->data, b->len);
    free(b->data);
    b->data = NULL;
    return st;
}

typedef struct {
    const json_t *doc;
    size_t flags;
} json_job;

static bool fill_json(FILE *f, void *arg) {
    const json_job *j = arg;
    return json_dumpf(j->doc, f, j->flags) == 0 && fputc('\n', f) != EOF;
}

sx_status fs_write_json(const char *path, const json_t *doc, size_t flags) {
    json_job j = {doc, flags};
    return fs_write_atomic(path, fill_json, &j);
}

sx_status fs_load_json(const char *path, json_t **out) {
    json_error_t err;
    *out = json_load_file(path, 0, &err);
    if (*out) return SX_OK;
    if (err.line < 1) {   // not a parse error: the file could not be read
        struct stat sb;
        return sx_fail(SX_ERR_IO, "cannot open %s (%s)", path, stat(path, &sb) ? strerror(errno) : err.text);
    }
    return sx_fail(SX_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
}

// Versions lo..hi of format; the one read into *read_version.
static sx_status load_versions(const char *path, const char *format, int lo, int hi, const char *noun, json_t **out,
                               int *read_version) {
    *out = NULL;
    if (access(path, F_OK)) return SX_OK;
    sx_status st = fs_load_json(path, out);
    if (st) return st;
    const char *f = json_string_value(json_object_get(*out, "format"));
    json_int_t v = json_integer_value(json_object_get(*out, "version"));
    if (f && !strcmp(f, format) && json_is_integer(json_object_get(*out, "version")) && v >= lo && v <= hi) {
        *read_version = (int)v;
        return SX_OK;
    }
    json_decref(*out);
    *out = NULL;
    if (lo == hi) return sx_fail(SX_ERR_FORMAT, "%s: not a %s of version %d (format \"%s\")", path, noun, hi, format);
    return sx_fail(SX_ERR_FORMAT, "%s: not a %s of version %d to %d (format \"%s\")", path, noun, lo, hi, format);
}

sx_status fs_load_versioned_json(const char *path, const char *format, int version, const char *noun, json_t **out) {
    int v;
    return load_versions(path, format, version, version, noun, out, &v);
}

sx_status fs_load_json_upto(const char *path, const char *format, int version, const char *noun, json_t **out,
                            int *read_version) {
    return load_versions(path, format, 1, version, noun, out, read_version);
}

sx_status fs_sha256_file(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s (%s)", path, strerror(errno));
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&ctx, n, buf);
    int bad = ferror(f);
    fclose(f);
    if (bad) return sx_fail(SX_ERR_IO, "%s: read failed", path);
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    return SX_OK;
}
