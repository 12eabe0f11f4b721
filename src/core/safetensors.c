// safetensors: see safetensors.h.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/status.h"
#include "core/fsutil.h"
#include "core/safetensors.h"

#define ST_MAX_HEADER ((size_t)100 << 20)   // the format's own limit

size_t st_dtype_size(const char *d) {
    static const struct { const char *name; size_t size; } known[] = {
        {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(d, known[i].name)) return known[i].size;
    return 0;
}

static size_t numel(const st_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

typedef struct {
    const st_tensor *t;
    size_t n;
    char *header;
    size_t header_len;   // padded
} st_job;

static bool write_body(FILE *f, void *arg) {
    const st_job *j = arg;
    uint64_t hl = j->header_len;
    unsigned char prefix[8];
    for (int b = 0; b < 8; b++) prefix[b] = (unsigned char)(hl >> (8 * b));
    if (fwrite(prefix, 1, 8, f) != 8 || fwrite(j->header, 1, j->header_len, f) != j->header_len) return false;
    for (size_t i = 0; i < j->n; i++)
        if (fwrite(j->t[i].data, 1, j->t[i].nbytes, f) != j->t[i].nbytes) return false;
    return true;
}

sx_status st_write(const char *path, const st_tensor *t, size_t n, json_t *metadata) {
    uLong crc = crc32_z(0L, Z_NULL, 0);
    json_t *root = json_object(), *meta = metadata ? json_deep_copy(metadata) : json_object();
    size_t off = 0;
    sx_status st = SX_OK;
    for (size_t i = 0; i < n && !st; i++) {
        size_t es = st_dtype_size(t[i].dtype);
        if (!es || t[i].nbytes != numel(&t[i]) * es || t[i].ndim > ST_MAX_DIMS)
            st = sx_fail(SX_ERR_ARG, "%s: tensor %s: dtype %s and shape do not match its %zu bytes", path, t[i].name,
                         t[i].dtype, t[i].nbytes);
        if (!st && json_object_get(root, t[i].name)) st = sx_fail(SX_ERR_ARG, "%s: tensor %s given twice", path, t[i].name);
        json_t *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++) json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
        json_object_set_new(root, t[i].name, json_pack("{s:s, s:o, s:[I, I]}", "dtype", t[i].dtype, "shape", shape,
                                                       "data_offsets", (json_int_t)off, (json_int_t)(off + t[i].nbytes)));
        off += t[i].nbytes;
        crc = crc32_z(crc, t[i].data, t[i].nbytes);
    }
    char crc_text[16];
    snprintf(crc_text, sizeof crc_text, "%lu", (unsigned long)crc);
    json_object_set_new(meta, "sextant_crc32", json_string(crc_text));
    json_object_set_new(root, "__metadata__", meta);
    char *header = st ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (st) return st;
    if (!header) return sx_fail(SX_ERR_NOMEM, "%s: cannot serialise the header", path);
    size_t len = strlen(header), padded = (len + 7) & ~(size_t)7;
    char *h = sx_realloc(header, padded + 1, "safetensors h");
    if (!h) { free(header); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    memset(h + len, ' ', padded - len);
    st_job job = {t, n, h, padded};
    st = fs_write_atomic(path, write_body, &job);
    free(h);
    return st;
}

void st_free(st_file *f) {
    json_decref(f->metadata);
    free(f->tensors);
    sx_free(f->buf);
    memset(f, 0, sizeof *f);
}

const st_tensor *st_find(const st_file *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

static int by_offset(const void *a, const void *b) {
    const st_tensor *x = a, *y = b;
    uintptr_t p = (uintptr_t)x->data, q = (uintptr_t)y->data;
    return (p > q) - (p < q);
}

// One header entry into *t; data points into the data section at base.
static sx_status parse_entry(const char *path, const char *name, json_t *e, const unsigned char *base, size_t data_size,
                             st_tensor *t) {
#define BAD(...) sx_fail(SX_ERR_FORMAT, __VA_ARGS__)
    memset(t, 0, sizeof *t);
    json_t *dt = json_object_get(e, "dtype"), *shape = json_object_get(e, "shape"), *off = json_object_get(e, "data_offsets");
    if (strlen(name) >= sizeof t->name) return BAD("%s: tensor name too long (%.40s...)", path, name);
    strcpy(t->name, name);
    if (!json_is_string(dt) || !st_dtype_size(json_string_value(dt)) || strlen(json_string_value(dt)) >= sizeof t->dtype)
        return BAD("%s: tensor %s: unknown dtype", path, name);
    strcpy(t->dtype, json_string_value(dt));
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_DIMS)
        return BAD("%s: tensor %s: shape is not a list of at most %d sizes", path, name, ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    size_t count = st_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0) return BAD("%s: tensor %s: bad shape", path, name);
        t->shape[d] = (size_t)json_integer_value(v);
        if (!sx_mul_size(count, t->shape[d], &count)) return BAD("%s: tensor %s: shape overflows", path, name);
    }
    json_t *b = json_array_get(off, 0), *en = json_array_get(off, 1);
    if (json_array_size(off) != 2 || !json_is_integer(b) || !json_is_integer(en) || json_integer_value(b) < 0 ||
        json_integer_value(en) < json_integer_value(b) || (size_t)json_integer_value(en) > data_size)
        return BAD("%s: tensor %s: data_offsets outside the %zu data bytes", path, name, data_size);
    t->nbytes = (size_t)(json_integer_value(en) - json_integer_value(b));
    if (t->nbytes != count)
        return BAD("%s: tensor %s: %zu bytes for a %s tensor of %zu bytes", path, name, t->nbytes, t->dtype, count);
    t->data = base + json_integer_value(b);
    return SX_OK;
#undef BAD
}

sx_status st_read(const char *path, st_file *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return sx_fail(SX_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    rewind(f);
    unsigned char *buf = size > 0 ? sx_alloc((size_t)size, "safetensors") : NULL;
    bool read_ok = buf && fread(buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!read_ok) { free(buf); return sx_fail(size > 0 && !buf ? SX_ERR_NOMEM : SX_ERR_IO, "%s: cannot read", path); }
    out->buf = buf;
    out->size = (size_t)size;
    uint64_t hl = 0;
    for (int b = 7; b >= 0 && size >= 8; b--) hl = hl << 8 | buf[b];
    sx_status st = SX_OK;
    if (size < 8 || hl > ST_MAX_HEADER || hl > (uint64_t)size - 8)
        st = sx_fail(SX_ERR_FORMAT, "%s: not a safetensors file (header size %llu in a file of %ld bytes)", path,
                     (unsigned long long)hl, size);
    json_error_t err;
    json_t *root = st ? NULL : json_loadb((const char *)buf + 8, (size_t)hl, JSON_REJECT_DUPLICATES, &err);
    if (!st && !json_is_object(root)) st = sx_fail(SX_ERR_FORMAT, "%s: header is not a JSON object (%s)", path, err.text);
    size_t data_size = st ? 0 : (size_t)size - 8 - (size_t)hl, n = json_object_size(root);
    const unsigned char *base = st ? buf : buf + 8 + hl;   // hl is checked against the size only when !st
    out->tensors = st ? NULL : sx_calloc_n(n ? n : 1, sizeof *out->tensors, "safetensors");
    if (!st && !out->tensors) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (st) break;
        if (!strcmp(key, "__metadata__")) {
            const char *k;
            json_t *v;
            json_object_foreach(val, k, v) if (!json_is_string(v)) st = sx_fail(SX_ERR_FORMAT, "%s: metadata %s is not a string", path, k);
            if (!json_is_object(val)) st = sx_fail(SX_ERR_FORMAT, "%s: __metadata__ is not an object", path);
            if (!st) out->metadata = json_incref(val);
        } else
            st = parse_entry(path, key, val, base, data_size, &out->tensors[out->n++]);
    }
    json_decref(root);
    if (!st) {
        qsort(out->tensors, out->n, sizeof *out->tensors, by_offset);
        for (size_t i = 1; i < out->n && !st; i++)
            if ((const unsigned char *)out->tensors[i].data < (const unsigned char *)out->tensors[i - 1].data + out->tensors[i - 1].nbytes)
                st = sx_fail(SX_ERR_FORMAT, "%s: tensors %s and %s overlap", path, out->tensors[i - 1].name, out->tensors[i].name);
        if (!out->metadata) out->metadata = json_object();
        const char *want = json_string_value(json_object_get(out->metadata, "sextant_crc32"));
        if (!st && want) {
            unsigned long got = crc32_z(crc32_z(0L, Z_NULL, 0), base, data_size);
            if (strtoul(want, NULL, 10) != got)
                st = sx_fail(SX_ERR_FORMAT, "%s: checksum mismatch (data crc32 %lu, header says %s): the file is damaged", path, got, want);
        }
    }
    if (st) st_free(out);
    return st;
}
