// value_head: see value_head.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/tensorfile.h"
#include "infer/value_head.h"

#define KIND "value_head"

// Views into the flat parameters.
typedef struct { float *w1, *b1, *w2, *b2; } head_view;
static head_view view(const value_head *h) {
    float *p = h->p;
    return (head_view){p, p + h->hidden * h->in, p + h->hidden * h->in + h->hidden, p + h->hidden * h->in + 2 * h->hidden};
}

static sx_status head_alloc(value_head *h, size_t in, size_t hidden, size_t trunk_params) {
    memset(h, 0, sizeof *h);
    if (in == 0 || hidden == 0) return sx_fail(SX_ERR_ARG, "value head needs a positive input width and hidden size");
    h->in = in, h->hidden = hidden, h->trunk_params = trunk_params;
    h->n_params = hidden * in + 2 * hidden + 1;
    h->p = sx_calloc_n(h->n_params, sizeof *h->p, "value head params");
    h->shift = sx_calloc_n(in, sizeof *h->shift, "value head shift");
    h->scale = sx_calloc_n(in, sizeof *h->scale, "value head scale");
    if (!h->p || !h->shift || !h->scale) { value_head_free(h); return sx_fail(SX_ERR_NOMEM, "out of memory for a value head"); }
    for (size_t i = 0; i < in; i++) h->scale[i] = 1.0f;
    return SX_OK;
}

sx_status value_head_init(value_head *h, size_t in, size_t hidden, size_t trunk_params, uint64_t seed) {
    sx_status st = head_alloc(h, in, hidden, trunk_params);
    if (st) return st;
    rng_state r;
    rng_seed(&r, seed);
    head_view v = view(h);
    rng_fill_normal(&r, v.w1, hidden * in, (float)(1.0 / sqrt((double)in)));
    rng_fill_normal(&r, v.w2, hidden, (float)(1.0 / sqrt((double)hidden)));
    return SX_OK;
}

void value_head_free(value_head *h) {
    free(h->p), free(h->shift), free(h->scale);
    memset(h, 0, sizeof *h);
}

void value_head_standardize(value_head *h, const float *x, size_t n) {
    for (size_t i = 0; i < h->in; i++) {
        double m = 0, v = 0;
        for (size_t k = 0; k < n; k++) m += x[k * h->in + i];
        m = n ? m / (double)n : 0;
        for (size_t k = 0; k < n; k++) v += (x[k * h->in + i] - m) * (x[k * h->in + i] - m);
        double sd = n ? sqrt(v / (double)n) : 0;
        h->shift[i] = (float)m, h->scale[i] = sd > 1e-6 ? (float)(1.0 / sd) : 1.0f;
    }
}

// The standardised input u = (x − shift)·scale of one example (in).
static double input(const value_head *h, const float *x, size_t i) { return ((double)x[i] - h->shift[i]) * h->scale[i]; }

double value_head_logit(const value_head *h, const float *x, double *z) {
    head_view v = view(h);
    double out = v.b2[0];
    for (size_t j = 0; j < h->hidden; j++) {
        double a = v.b1[j];
        const float *w = v.w1 + j * h->in;
        for (size_t i = 0; i < h->in; i++) a += (double)w[i] * input(h, x, i);
        z[j] = tanh(a);
        out += (double)v.w2[j] * z[j];
    }
    return out;
}

double value_head_prob(const value_head *h, const float *x, double *z) {
    return 1.0 / (1.0 + exp(-value_head_logit(h, x, z)));
}

double value_head_flops(const value_head *h) { return 2.0 * (double)(h->hidden * h->in + h->hidden); }

// BCE in terms of the logit v, stable for large |v|: log(1 + e^v) − y·v. Its derivative: sigmoid(v) − y.
static double bce_logit(double v, double y) { return fmax(v, 0) + log1p(exp(-fabs(v))) - y * v; }

double value_head_loss(const value_head *h, const float *x, const float *y, size_t n, double *grad) {
    head_view v = view(h);
    size_t H = h->hidden, C = h->in;
    double *z = sx_alloc(H * sizeof *z, "value head z"), loss = 0;
    if (!z) return NAN;
    if (grad) memset(grad, 0, h->n_params * sizeof *grad);
    double *g_w1 = grad, *g_b1 = grad ? grad + H * C : NULL, *g_w2 = grad ? g_b1 + H : NULL, *g_b2 = grad ? g_w2 + H : NULL;
    for (size_t k = 0; k < n; k++) {
        const float *xk = x + k * C;
        double logit = value_head_logit(h, xk, z);
        loss += bce_logit(logit, y[k]);
        if (!grad) continue;
        // v = w2·z + b2, z = tanh(W1·u + b1): dv = p − y; dw2 = dv·z; da = dv·w2·(1 − z²); dW1 = da·uᵀ; db1 = da.
        double dv = (1.0 / (1.0 + exp(-logit)) - y[k]) / (double)n;
        g_b2[0] += dv;
        for (size_t j = 0; j < H; j++) {
            g_w2[j] += dv * z[j];
            double da = dv * v.w2[j] * (1.0 - z[j] * z[j]);
            g_b1[j] += da;
            for (size_t i = 0; i < C; i++) g_w1[j * C + i] += da * input(h, xk, i);
        }
    }
    free(z);
    return n ? loss / (double)n : 0;
}

sx_status value_head_train(value_head *h, const float *x, const float *y, size_t n, const value_train_config *c,
                           const value_split_set *valid, double *loss, size_t *best_epoch) {
    if (n == 0) return sx_fail(SX_ERR_ARG, "value head: no training examples");
    size_t P = h->n_params, B = c->batch ? c->batch : 64, C = h->in;
    double *g = sx_calloc_n(P, sizeof *g, "value head grad"), *m = sx_calloc_n(P, sizeof *m, "value head m"),
           *s = sx_calloc_n(P, sizeof *s, "value head s");
    size_t *order = sx_calloc_n(n, sizeof *order, "value head order"), best_e = 0;
    float *best = valid ? sx_alloc(P * sizeof *best, "value head best") : NULL;
    float *bx = sx_calloc_n(B * C, sizeof *bx, "value head batch x"), *by = sx_calloc_n(B, sizeof *by, "value head batch y");
    sx_status st = g && m && s && order && bx && by && (best || !valid) ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory training a value head");
    rng_state r;
    rng_seed(&r, c->seed);
    for (size_t i = 0; i < n; i++) order[i] = i;
    size_t t = 0;
    double sum = 0, best_valid = INFINITY, best_train = NAN;
    for (size_t e = 0; e < c->epochs && !st; e++) {
        for (size_t i = n; i > 1; i--) {   // Fisher–Yates
            size_t j = (size_t)rng_below(&r, i), tmp = order[i - 1];
            order[i - 1] = order[j], order[j] = tmp;
        }
        sum = 0;
        for (size_t b0 = 0; b0 < n; b0 += B) {
            size_t nb = n - b0 < B ? n - b0 : B;
            for (size_t k = 0; k < nb; k++) {
                memcpy(bx + k * C, x + order[b0 + k] * C, C * sizeof *bx);
                by[k] = y[order[b0 + k]];
            }
            double l = value_head_loss(h, bx, by, nb, g);
            if (!isfinite(l)) { st = sx_fail(SX_ERR_NUMERIC, "value head: non-finite loss"); break; }
            sum += l * (double)nb;
            t++;
            double c1 = 1 - pow(0.9, (double)t), c2 = 1 - pow(0.999, (double)t);
            for (size_t i = 0; i < P; i++) {
                m[i] = 0.9 * m[i] + 0.1 * g[i];
                s[i] = 0.999 * s[i] + 0.001 * g[i] * g[i];
                double upd = (m[i] / c1) / (sqrt(s[i] / c2) + 1e-8) + c->weight_decay * h->p[i];
                h->p[i] -= (float)(c->lr * upd);
            }
        }
        double vl = valid ? value_head_loss(h, valid->x, valid->y, valid->n, NULL) : -(double)e;   // no valid: the last
        if (!st && vl < best_valid) {
            best_valid = vl, best_train = sum / (double)n, best_e = e + 1;
            if (best) memcpy(best, h->p, P * sizeof *best);
        }
    }
    if (!st && best) memcpy(h->p, best, P * sizeof *best);
    if (loss) *loss = best_train;
    if (best_epoch) *best_epoch = best_e;
    free(g), free(m), free(s), free(order), free(bx), free(by), free(best);
    return st;
}

sx_status value_head_save(const value_head *h, const char *path, json_t *extra) {
    json_t *meta = extra ? json_deep_copy(extra) : json_object();
    json_object_set_new(meta, "in", json_integer((json_int_t)h->in));
    json_object_set_new(meta, "hidden", json_integer((json_int_t)h->hidden));
    json_object_set_new(meta, "trunk_params", json_integer((json_int_t)h->trunk_params));
    tf_tensor t[3] = {{.name = "params", .dtype = TF_F32, .ndim = 1, .shape = {h->n_params}, .nbytes = h->n_params * sizeof(float),
                       .data = h->p},
                      {.name = "shift", .dtype = TF_F32, .ndim = 1, .shape = {h->in}, .nbytes = h->in * sizeof(float), .data = h->shift},
                      {.name = "scale", .dtype = TF_F32, .ndim = 1, .shape = {h->in}, .nbytes = h->in * sizeof(float), .data = h->scale}};
    sx_status st = tf_write(path, KIND, meta, t, 3);
    json_decref(meta);
    return st;
}

sx_status value_head_load(const char *path, value_head *h) {
    memset(h, 0, sizeof *h);
    tensorfile f;
    sx_status st = tf_read(path, KIND, &f);
    if (st) return st;
    json_int_t in = json_integer_value(json_object_get(f.meta, "in")), hid = json_integer_value(json_object_get(f.meta, "hidden")),
               tp = json_integer_value(json_object_get(f.meta, "trunk_params"));
    const tf_tensor *t = tf_find(&f, "params"), *sh = tf_find(&f, "shift"), *sc = tf_find(&f, "scale");
    if (in <= 0 || hid <= 0 || tp < 0 || !t || !sh || !sc || t->dtype != TF_F32 || sh->dtype != TF_F32 || sc->dtype != TF_F32)
        st = sx_fail(SX_ERR_FORMAT, "%s: value head without in/hidden/trunk_params or params/shift/scale", path);
    if (!st) st = head_alloc(h, (size_t)in, (size_t)hid, (size_t)tp);
    if (!st && (t->nbytes != h->n_params * sizeof(float) || sh->nbytes != h->in * sizeof(float) || sc->nbytes != h->in * sizeof(float)))
        st = sx_fail(SX_ERR_FORMAT, "%s: value head tensors do not match its shape (in %zu, hidden %zu)", path, h->in, h->hidden);
    if (!st) {
        memcpy(h->p, t->data, t->nbytes);
        memcpy(h->shift, sh->data, sh->nbytes);
        memcpy(h->scale, sc->data, sc->nbytes);
    }
    for (size_t i = 0; !st && i < h->n_params + 2 * h->in; i++) {
        float x = i < h->n_params ? h->p[i] : i < h->n_params + h->in ? h->shift[i - h->n_params] : h->scale[i - h->n_params - h->in];
        if (!isfinite(x)) st = sx_fail(SX_ERR_FORMAT, "%s: value head value %zu is not finite", path, i);
    }
    if (st) value_head_free(h);
    tf_free(&f);
    return st;
}

bool value_head_is_file(const char *path) {
    tensorfile f;
    if (tf_read(path, KIND, &f)) return false;
    tf_free(&f);
    return true;
}
