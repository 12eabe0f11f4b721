#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "core/status.h"
#include "core/tensorfile.h"

#define TF_MAGIC "SXTENSOR"
#define TF_END "SXEN"
#define TF_VERSION 1u
#define TF_PREFIX 24u
#define TF_MAX_HEADER (64u << 20) // a JSON index larger than 64 MiB is corrupt, not big

int tf_fail_write_after = 0;
int tf_stall_write_after = 0;

static const char *dtype_names[] = {"f32", "i32", "u8"};

size_t tf_dtype_size(tf_dtype d) { return d == TF_U8 ? 1 : 4; }

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

// write() all of buf, honouring the fault-injection hook.
static int write_all(int fd, const void *buf, size_t n, uLong *crc) {
    const char *p = buf;
    if (crc) *crc = crc32_z(*crc, (const Bytef *)buf, n);
    while (n) {
        if (tf_fail_write_after > 0 && --tf_fail_write_after == 0) {
            errno = ENOSPC;
            return -1;
        }
        // A disk that stalls until the process is killed (ten minutes at most), so that a test's kill lands
        // inside this write however loaded the machine is; the test waits for the line, not for a quiet
        // moment. sleep() returns early on a signal: sleep the rest.
        if (tf_stall_write_after > 0 && --tf_stall_write_after == 0) {
            fprintf(stderr, "tensorfile: write stalled (SEXTANT_STALL_WRITE_AFTER)\n");
            for (unsigned left = 600; left; ) left = sleep(left);
        }
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_zeros(int fd, size_t n, uLong *crc) {
    static const char zeros[64];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (write_all(fd, zeros, k, crc)) return -1;
        n -= k;
    }
    return 0;
}

static json_t *index_json(const char *kind, json_t *meta, const tf_tensor *t, size_t n) {
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "kind", json_string(kind));
    json_object_set_new(root, "meta", meta ? json_incref(meta) : json_object());
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_object(), *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++) json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
        json_object_set_new(e, "name", json_string(t[i].name));
        json_object_set_new(e, "dtype", json_string(dtype_names[t[i].dtype]));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "offset", json_integer((json_int_t)off));
        json_object_set_new(e, "nbytes", json_integer((json_int_t)t[i].nbytes));
        json_array_append_new(arr, e);
        off = align64(off + t[i].nbytes);
    }
    json_object_set_new(root, "tensors", arr);
    return root;
}

static sx_status fsync_dir_of(const char *path) {
    char *copy = sx_strdup(path, "tensorfile copy");
    if (!copy) return sx_fail(SX_ERR_NOMEM, "out of memory");
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    free(copy);
    if (fd < 0) return SX_OK; // not fatal: the rename is done
    fsync(fd);
    close(fd);
    return SX_OK;
}

sx_status tf_write(const char *path, const char *kind, json_t *meta, const tf_tensor *t, size_t n) {
    json_t *root = index_json(kind, meta, t, n);
    char *header = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!header) return sx_fail(SX_ERR_NOMEM, "%s: cannot serialise the header", path);
    size_t hlen = strlen(header);

    size_t plen = strlen(path);
    char *tmp = sx_alloc(plen + 16, "tensorfile tmp");
    if (!tmp) { free(header); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    snprintf(tmp, plen + 16, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        sx_status st = sx_fail(SX_ERR_IO, "%s: cannot create (%s)", tmp, strerror(errno));
        free(header); free(tmp);
        return st;
    }
    uLong crc = crc32_z(0L, Z_NULL, 0);
    unsigned char prefix[TF_PREFIX];
    memcpy(prefix, TF_MAGIC, 8);
    uint32_t ver = TF_VERSION, zero = 0;
    uint64_t hl = hlen;
    memcpy(prefix + 8, &ver, 4);
    memcpy(prefix + 12, &zero, 4);
    memcpy(prefix + 16, &hl, 8);
    int bad = write_all(fd, prefix, TF_PREFIX, &crc) || write_all(fd, header, hlen, &crc) ||
              write_zeros(fd, align64(TF_PREFIX + hlen) - (TF_PREFIX + hlen), &crc);
    for (size_t i = 0; i < n && !bad; i++)
        bad = write_all(fd, t[i].data, t[i].nbytes, &crc) ||
              write_zeros(fd, align64(t[i].nbytes) - t[i].nbytes, &crc);
    if (!bad) {
        unsigned char trailer[8];
        uint32_t c = (uint32_t)crc;
        memcpy(trailer, &c, 4);
        memcpy(trailer + 4, TF_END, 4);
        bad = write_all(fd, trailer, 8, NULL) || fsync(fd) != 0;
    }
    int saved = errno;
    free(header);
    if (close(fd) != 0 && !bad) { bad = 1; saved = errno; }
    if (bad || rename(tmp, path) != 0) {
        if (!bad) saved = errno;
        unlink(tmp);
        sx_status st = sx_fail(SX_ERR_IO, "%s: write failed (%s); the previous file, if any, is intact", path,
                               strerror(saved));
        free(tmp);
        return st;
    }
    free(tmp);
    return fsync_dir_of(path);
}

static sx_status bad(const char *path, const char *what) {
    return sx_fail(SX_ERR_FORMAT, "%s: %s", path, what);
}

static sx_status parse_index(const char *path, tensorfile *f, json_t *root, size_t data_start) {
    json_t *arr = json_object_get(root, "tensors");
    if (!json_is_array(arr)) return bad(path, "header has no tensor index");
    f->n = json_array_size(arr);
    f->tensors = sx_calloc_n(f->n ? f->n : 1, sizeof *f->tensors, "tensorfile f.tensors");
    if (!f->tensors) return sx_fail(SX_ERR_NOMEM, "out of memory");
    size_t data_end = f->buf_size - 8;
    for (size_t i = 0; i < f->n; i++) {
        json_t *e = json_array_get(arr, i), *shape = json_object_get(e, "shape");
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *dt = json_string_value(json_object_get(e, "dtype"));
        json_t *jo = json_object_get(e, "offset"), *jn = json_object_get(e, "nbytes");
        tf_tensor *t = &f->tensors[i];
        if (!name || !dt || !json_is_array(shape) || !json_is_integer(jo) || !json_is_integer(jn) ||
            strlen(name) >= sizeof t->name || json_array_size(shape) > 4)
            return bad(path, "malformed tensor entry in the header");
        strcpy(t->name, name);
        int d;
        for (d = 0; d < 3 && strcmp(dt, dtype_names[d]); d++) {}
        if (d == 3) return sx_fail(SX_ERR_FORMAT, "%s: tensor %s has unknown dtype '%s'", path, name, dt);
        t->dtype = (tf_dtype)d;
        t->ndim = (int)json_array_size(shape);
        size_t count = 1;
        for (int k = 0; k < t->ndim; k++) {
            json_t *s = json_array_get(shape, k);
            if (!json_is_integer(s) || json_integer_value(s) < 0 ||
                !sx_mul_size(count, (size_t)json_integer_value(s), &count))
                return sx_fail(SX_ERR_FORMAT, "%s: tensor %s has a bad shape", path, name);
            t->shape[k] = (size_t)json_integer_value(s);
        }
        json_int_t off = json_integer_value(jo), nb = json_integer_value(jn);
        if (off < 0 || nb < 0 || (size_t)nb != count * tf_dtype_size(t->dtype) || off % 64)
            return sx_fail(SX_ERR_FORMAT, "%s: tensor %s: size or offset inconsistent with its shape", path, name);
        if ((size_t)off > data_end - data_start || (size_t)nb > data_end - data_start - (size_t)off)
            return sx_fail(SX_ERR_FORMAT, "%s: tensor %s lies beyond the end of the file (truncated?)", path, name);
        t->nbytes = (size_t)nb;
        t->data = (char *)f->buf + data_start + off;
    }
    return SX_OK;
}

sx_status tf_read(const char *path, const char *kind, tensorfile *f) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return sx_fail(SX_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        return bad(path, "not a regular file");
    }
    size_t size = (size_t)st.st_size;
    if (size < TF_PREFIX + 8) { fclose(fp); return bad(path, "too short to be a sextant tensor file (truncated?)"); }
    f->buf = sx_alloc(size, path);
    if (!f->buf) { fclose(fp); return SX_ERR_NOMEM; }   // sx_alloc said what
    f->buf_size = size;
    size_t got = fread(f->buf, 1, size, fp);
    fclose(fp);
    sx_status s = SX_OK;
    unsigned char *b = f->buf;
    uint32_t ver, crc_stored;
    uint64_t hlen;
    memcpy(&ver, b + 8, 4);
    memcpy(&hlen, b + 16, 8);
    memcpy(&crc_stored, b + size - 8, 4);
    json_t *root = NULL;
    if (got != size) s = sx_fail(SX_ERR_IO, "%s: short read", path);
    else if (memcmp(b, TF_MAGIC, 8)) s = bad(path, "not a sextant tensor file (wrong magic)");
    else if (ver != TF_VERSION) s = sx_fail(SX_ERR_FORMAT, "%s: format version %u, this build reads %u", path, ver, TF_VERSION);
    else if (memcmp(b + size - 4, TF_END, 4)) s = bad(path, "truncated (end marker missing)");
    else if (hlen > TF_MAX_HEADER || hlen > size - TF_PREFIX - 8 || align64(TF_PREFIX + hlen) > size - 8)
        s = bad(path, "header length is larger than the file (truncated or corrupt)");
    else if ((uint32_t)crc32_z(0L, b, size - 8) != crc_stored) s = bad(path, "checksum mismatch (corrupt file)");
    if (s == SX_OK) {
        json_error_t err;
        root = json_loadb((const char *)b + TF_PREFIX, (size_t)hlen, 0, &err);
        if (!root) s = sx_fail(SX_ERR_FORMAT, "%s: bad JSON header: %s", path, err.text);
    }
    if (s == SX_OK) {
        const char *k = json_string_value(json_object_get(root, "kind"));
        if (kind && (!k || strcmp(k, kind)))
            s = sx_fail(SX_ERR_MISMATCH, "%s: is a '%s' file, expected a '%s' file", path, k ? k : "?", kind);
    }
    if (s == SX_OK) s = parse_index(path, f, root, align64(TF_PREFIX + hlen));
    if (s == SX_OK) {
        json_t *meta = json_object_get(root, "meta");
        f->meta = json_is_object(meta) ? json_incref(meta) : json_object();
    }
    json_decref(root);
    if (s != SX_OK) tf_free(f);
    return s;
}

void tf_free(tensorfile *f) {
    json_decref(f->meta);
    free(f->tensors);
    sx_free(f->buf);
    memset(f, 0, sizeof *f);
}

const tf_tensor *tf_find(const tensorfile *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}
