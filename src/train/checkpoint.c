#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/tensorfile.h"
#include "train/checkpoint.h"

#define KIND "checkpoint"

sx_status checkpoint_save(const char *path, const model *m, const optimizer *o, json_t *meta) {
    size_t n = m->table.n + (o ? o->n_arrays : 0);
    tf_tensor *t = sx_calloc_n(n, sizeof *t, "checkpoint t");
    if (!t) return sx_fail(SX_ERR_NOMEM, "out of memory writing %s", path);
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        snprintf(t[i].name, sizeof t[i].name, "param.%s", s->name);
        t[i].dtype = TF_F32;
        t[i].ndim = s->rows == 1 ? 1 : 2;
        t[i].shape[0] = s->rows == 1 ? s->cols : s->rows;
        t[i].shape[1] = s->cols;
        t[i].nbytes = s->rows * s->cols * sizeof(float);
        t[i].data = m->p[i];
    }
    for (size_t j = 0; o && j < o->n_arrays; j++) {
        tf_tensor *x = &t[m->table.n + j];
        snprintf(x->name, sizeof x->name, "opt.%s", o->arrays[j].name);
        x->dtype = TF_F32;
        x->ndim = 1;
        x->shape[0] = o->arrays[j].numel;
        x->nbytes = o->arrays[j].numel * sizeof(float);
        x->data = o->arrays[j].data;
    }
    json_t *root = json_object();
    json_object_set_new(root, "model", model_config_to_json(&m->cfg));
    json_object_set_new(root, "optimizer_steps", json_integer(o ? o->t : 0));
    json_object_set_new(root, "has_optimizer", json_boolean(o != NULL));
    if (meta) json_object_set(root, "train", meta);
    sx_status st = tf_write(path, KIND, root, t, n);
    json_decref(root);
    free(t);
    return st;
}

static sx_status check_model(const char *path, const tensorfile *f, const model *m) {
    json_t *mc = json_object_get(f->meta, "model");
    const char *desc = json_string_value(json_object_get(mc, "descriptor"));
    json_int_t vocab = json_integer_value(json_object_get(mc, "vocab"));
    if (!desc) return sx_fail(SX_ERR_FORMAT, "%s: checkpoint metadata has no model descriptor", path);
    if (strcmp(desc, m->cfg.descriptor) || (size_t)vocab != m->cfg.vocab)
        return sx_fail(SX_ERR_MISMATCH, "%s: checkpoint is for model %s (vocab %lld), not %s (vocab %zu)", path, desc,
                       (long long)vocab, m->cfg.descriptor, m->cfg.vocab);
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        char name[128];
        snprintf(name, sizeof name, "param.%s", s->name);
        const tf_tensor *t = tf_find(f, name);
        if (!t) return sx_fail(SX_ERR_MISMATCH, "%s: tensor %s is missing", path, name);
        if (t->dtype != TF_F32 || t->nbytes != s->rows * s->cols * sizeof(float))
            return sx_fail(SX_ERR_MISMATCH, "%s: tensor %s has the wrong size for %s", path, name, m->cfg.descriptor);
    }
    return SX_OK;
}

// A checkpoint whose checksum holds can still carry NaN or infinite weights (written by another tool, or
// edited): sampling from them gave garbage without a word, and resuming would stop at the first step.
static sx_status check_finite(const char *path, const tf_tensor *t) {
    if (t->dtype != TF_F32) return SX_OK;
    const float *x = t->data;
    for (size_t i = 0; i < t->nbytes / sizeof(float); i++)
        if (!isfinite(x[i]))
            return sx_fail(SX_ERR_FORMAT, "%s: tensor %s holds %g at index %zu: the weights are unusable (a checkpoint "
                           "from a diverged run, or corrupted)", path, t->name, (double)x[i], i);
    return SX_OK;
}

sx_status checkpoint_load(const char *path, model *m, optimizer *o, json_t **meta_out) {
    tensorfile f;
    sx_status st = tf_read(path, KIND, &f);
    if (st) return st;
    st = check_model(path, &f, m);
    if (!st && o && !json_is_true(json_object_get(f.meta, "has_optimizer")))
        st = sx_fail(SX_ERR_MISMATCH, "%s: holds weights only, no optimizer state to resume from", path);
    json_t *ot = json_object_get(f.meta, "optimizer_steps");
    if (!st && o && (!json_is_integer(ot) || json_integer_value(ot) < 0))
        st = sx_fail(SX_ERR_FORMAT, "%s: checkpoint field optimizer_steps is not a whole number >= 0 (a corrupted or "
                     "hand-edited checkpoint)", path);
    for (size_t j = 0; !st && o && j < o->n_arrays; j++) {
        char name[160];
        snprintf(name, sizeof name, "opt.%s", o->arrays[j].name);
        const tf_tensor *t = tf_find(&f, name);
        if (!t || t->nbytes != o->arrays[j].numel * sizeof(float))
            st = sx_fail(SX_ERR_MISMATCH, "%s: optimizer state %s is missing or has the wrong size (another optimizer?)",
                         path, name);
    }
    for (size_t i = 0; !st && i < f.n; i++) st = check_finite(path, &f.tensors[i]);
    if (!st) {
        for (size_t i = 0; i < m->table.n; i++) {
            char name[128];
            snprintf(name, sizeof name, "param.%s", m->table.v[i].name);
            const tf_tensor *t = tf_find(&f, name);
            memcpy(m->p[i], t->data, t->nbytes);
        }
        for (size_t j = 0; o && j < o->n_arrays; j++) {
            char name[160];
            snprintf(name, sizeof name, "opt.%s", o->arrays[j].name);
            const tf_tensor *t = tf_find(&f, name);
            memcpy(o->arrays[j].data, t->data, t->nbytes);
        }
        if (o) o->t = (long)json_integer_value(ot);
        if (meta_out) {
            json_t *tm = json_object_get(f.meta, "train");
            *meta_out = tm ? json_incref(tm) : json_object();
        }
    }
    tf_free(&f);
    return st;
}

// "[64, 32]" or "[64]": a tensor's shape for a message.
static const char *shape_text(int ndim, const size_t *shape, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && used < n; d++) used += (size_t)snprintf(buf + used, n - used, "%s%zu", d ? ", " : "", shape[d]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

sx_status checkpoint_load_weights(const char *path, model *m) {
    tensorfile f;
    sx_status st = tf_read(path, KIND, &f);
    if (st) return st;
    for (size_t i = 0; i < m->table.n && !st; i++) {
        const param_spec *s = &m->table.v[i];
        char name[128], want[64], got[64];
        snprintf(name, sizeof name, "param.%s", s->name);
        const size_t shape[2] = {s->rows == 1 ? s->cols : s->rows, s->cols};
        const int ndim = s->rows == 1 ? 1 : 2;
        const tf_tensor *t = tf_find(&f, name);
        if (!t) st = sx_fail(SX_ERR_MISMATCH, "%s: has no tensor %s, which model %s needs: initialise only from a "
                             "checkpoint of the same shapes", path, name, m->cfg.descriptor);
        else if (t->dtype != TF_F32 || t->ndim != ndim || t->shape[0] != shape[0] || (ndim == 2 && t->shape[1] != shape[1]))
            st = sx_fail(SX_ERR_MISMATCH, "%s: tensor %s is %s there but %s in model %s: initialise only from a checkpoint "
                         "of the same shapes", path, name, shape_text(t->ndim, t->shape, got, sizeof got),
                         shape_text(ndim, shape, want, sizeof want), m->cfg.descriptor);
        else st = check_finite(path, t);
    }
    for (size_t i = 0; i < f.n && !st; i++)   // a tensor the model lacks (a deeper source) would be dropped silently
        if (!strncmp(f.tensors[i].name, "param.", 6) && param_table_find(&m->table, f.tensors[i].name + 6) < 0)
            st = sx_fail(SX_ERR_MISMATCH, "%s: holds tensor %s, which model %s does not have: initialise only from a "
                         "checkpoint of the same shapes", path, f.tensors[i].name, m->cfg.descriptor);
    for (size_t i = 0; i < m->table.n && !st; i++) {
        char name[128];
        snprintf(name, sizeof name, "param.%s", m->table.v[i].name);
        const tf_tensor *t = tf_find(&f, name);
        memcpy(m->p[i], t->data, t->nbytes);
    }
    tf_free(&f);
    return st;
}

sx_status checkpoint_peek_model(const char *path, char *descriptor, size_t descriptor_size, size_t *vocab) {
    tensorfile f;
    sx_status st = tf_read(path, KIND, &f);
    if (st) return st;
    json_t *mc = json_object_get(f.meta, "model");
    const char *desc = json_string_value(json_object_get(mc, "descriptor"));
    if (!desc || strlen(desc) >= descriptor_size)
        st = sx_fail(SX_ERR_FORMAT, "%s: checkpoint metadata has no valid model descriptor", path);
    else {
        strcpy(descriptor, desc);
        *vocab = (size_t)json_integer_value(json_object_get(mc, "vocab"));
    }
    tf_free(&f);
    return st;
}

sx_status checkpoint_open_model(const char *path, model *m) {
    char desc[128];
    size_t vocab = 0;
    model_config c;
    memset(m, 0, sizeof *m);
    sx_status st = checkpoint_peek_model(path, desc, sizeof desc, &vocab);
    if (!st) st = model_config_parse(desc, vocab, &c);
    if (!st) st = model_init(m, &c);
    if (!st) st = checkpoint_load(path, m, NULL, NULL);
    if (st) model_free(m);
    return st;
}
