// modelcheck: the whole-model checks shared by tests/test_model.c and tests/test_variants.c — directional
// finite-difference gradient checks on tiny configs, and comparison with the PyTorch reference's golden
// fixtures (logits, loss, every gradient, parameters after AdamW and Muon steps).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/tensorfile.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "modelcheck.h"
#include "testlib.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

// Every tensor random and non-zero (gains near 1). Routers get 4× the usual scale so the top-k choices have
// clear margins and the finite-difference steps below never flip a routing decision.
void modelcheck_randomize(model *m, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        size_t n = s->rows * s->cols;
        bool gain = s->group == PGROUP_GAIN;
        float std = gain ? 0.1f : (ends_with(s->name, ".router") ? 4.0f : 1.0f) / sqrtf((float)s->cols);
        rng_fill_normal(&r, m->p[i], n, std);
        if (gain && !ends_with(s->name, "router_bias"))
            for (size_t j = 0; j < n; j++) m->p[i][j] += 1.0f;
    }
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// The training objective: mean cross-entropy plus the auxiliary loss of the same forward, plus the extra
// targets' loss when the model has some (only the training pass scores them: with grad_scale 0 it adds zeros
// to the gradients).
static double objective(model *m, const int32_t *tok) {
    double l;
    if (m->n_extra) {
        l = model_loss_and_grad(m, tok, 0.0f);
        return l + model_aux_loss(m) + model_extra_loss(m);
    }
    CHECK(model_loss(m, tok, NULL, &l) == SX_OK);
    return l + model_aux_loss(m);
}

// Directional central differences per tensor, along the gradient and along a random unit direction. The step
// moves the objective by ~1e-3 (small enough that no MoE routing decision flips; fp32 noise of the loss is
// still < 1e-3·‖g‖); tolerance 1e-2·‖g‖ as in tests/test_model.c.
// The MoE selection bias has no gradient by definition: its gradient must be exactly zero.
void modelcheck_gradcheck_extra(const char *descriptor, size_t mtp, const int32_t *prefix, const float *w) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse(descriptor, 0, &c) == SX_OK)) { fprintf(stderr, "  %s\n", sx_last_error()); return; }
    if (!CHECK(model_init(&m, &c) == SX_OK)) return;
    if (mtp || prefix) {
        CHECK(model_set_extra_targets(&m, mtp, prefix) == SX_OK);
        model_set_extra_weights(&m, w);
    }
    size_t B = 2, T = 7;
    CHECK(model_reserve(&m, B, T) == SX_OK);
    modelcheck_randomize(&m, 11);
    int32_t tok[2 * 8];
    rng_state r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < B * (T + 1); i++) tok[i] = (int32_t)rng_below(&r, c.vocab);
    model_zero_grad(&m);
    model_loss_and_grad(&m, tok, 1.0f);
    rng_seed(&r, 99);
    size_t bad = 0;
    for (size_t i = 0; i < m.table.n; i++) {
        const param_spec *s = &m.table.v[i];
        size_t n = s->rows * s->cols;
        float *p = m.p[i], *g = m.g[i];
        double gnorm = sqrt(dot(g, g, n));
        if (ends_with(s->name, "router_bias")) { bad += gnorm != 0; continue; }
        if (gnorm == 0) { bad++; fprintf(stderr, "  %s: %s has a zero gradient\n", descriptor, s->name); continue; }
        float *dir = malloc(n * sizeof *dir), *saved = malloc(n * sizeof *saved);
        memcpy(saved, p, n * sizeof *p);
        for (int which = 0; which < 2; which++) {
            if (which == 0) for (size_t j = 0; j < n; j++) dir[j] = (float)(g[j] / gnorm);
            else {
                rng_fill_normal(&r, dir, n, 1.0f);
                double dn = sqrt(dot(dir, dir, n));
                for (size_t j = 0; j < n; j++) dir[j] = (float)(dir[j] / dn);
            }
            double eps = fmin(1e-3 / fmax(gnorm, 1e-3), 0.01);
            for (size_t j = 0; j < n; j++) p[j] = saved[j] + (float)(eps * dir[j]);
            double lp = objective(&m, tok);
            for (size_t j = 0; j < n; j++) p[j] = saved[j] - (float)(eps * dir[j]);
            double lm = objective(&m, tok);
            memcpy(p, saved, n * sizeof *p);
            double fd = (lp - lm) / (2 * eps), an = dot(g, dir, n);
            if (fabs(fd - an) > 1e-2 * gnorm + 1e-6) {
                bad++;
                fprintf(stderr, "  %s: %s direction %d: analytic %.6g, finite difference %.6g (|g| %.3g)\n",
                        descriptor, s->name, which, an, fd, gnorm);
            }
        }
        free(dir);
        free(saved);
    }
    CHECK(bad == 0);
    model_free(&m);
}

void modelcheck_gradcheck(const char *descriptor) { modelcheck_gradcheck_extra(descriptor, 0, NULL, NULL); }

// ---- golden fixtures ----
static const tf_tensor *need(const tensorfile *f, const char *name) {
    const tf_tensor *t = tf_find(f, name);
    if (!t) fprintf(stderr, "  fixture tensor %s missing\n", name);
    return t;
}

// rtol relative to each element plus rtol of the tensor's largest magnitude, plus atol.
static void close_tensor(const char *what, const float *got, const float *want, size_t n, double rtol, double atol) {
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(want[i]));
    size_t wi;
    double e = testlib_max_rel_err(got, want, n, rtol, rtol * mx + atol + 1e-12, &wi);
    if (!CHECK(e <= 1)) fprintf(stderr, "  %s[%zu]: got %.8g want %.8g (normalised error %.3g)\n", what, wi, got[wi], want[wi], e);
}

static void load_params(model *m, const tensorfile *f, const char *prefix) {
    for (size_t i = 0; i < m->table.n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s.%s", prefix, m->table.v[i].name);
        const tf_tensor *t = need(f, name);
        if (t && CHECK(t->nbytes == m->table.v[i].rows * m->table.v[i].cols * sizeof(float)))
            memcpy(m->p[i], t->data, t->nbytes);
    }
}

static float meta_f(json_t *o, const char *k) { return (float)json_number_value(json_object_get(o, k)); }

// k optimizer steps on the fixture's batch; parameters compared like tests/test_model.c (1% of lr·steps).
static void check_optimizer(const char *path, const tensorfile *f, model *m, const int32_t *tok, optimizer_kind kind) {
    json_t *a = json_object_get(f->meta, "adamw"), *mu = json_object_get(f->meta, "muon");
    optimizer_config oc;
    optimizer_config_default(&oc);
    oc.kind = kind;
    oc.lr = meta_f(a, "lr"), oc.beta1 = meta_f(a, "beta1"), oc.beta2 = meta_f(a, "beta2"), oc.eps = meta_f(a, "eps");
    oc.weight_decay = meta_f(a, "wd"), oc.clip_norm = meta_f(a, "clip");
    oc.muon_lr = meta_f(mu, "lr"), oc.muon_momentum = meta_f(mu, "momentum"), oc.muon_weight_decay = meta_f(mu, "wd");
    long steps = (long)json_integer_value(json_object_get(f->meta, "steps"));
    load_params(m, f, "param");
    param_ref *refs = calloc(m->table.n, sizeof *refs);
    model_param_refs(m, refs);
    optimizer o;
    if (!CHECK(optimizer_init(&o, &oc, refs, m->table.n) == SX_OK)) { free(refs); return; }
    for (long s = 0; s < steps; s++) {
        model_zero_grad(m);
        model_loss_and_grad(m, tok, 1.0f);
        optimizer_step(&o, 1.0);
    }
    double tol = 0.01 * fmax(oc.lr, kind == OPT_MUON ? oc.muon_lr * 2 : 0) * (double)steps;
    for (size_t i = 0; i < m->table.n; i++) {
        char name[128], what[200];
        snprintf(name, sizeof name, "%s%ld.%s", kind == OPT_MUON ? "muon" : "adamw", steps, m->table.v[i].name);
        snprintf(what, sizeof what, "%s %s", path, name);
        const tf_tensor *t = need(f, name);
        if (t) close_tensor(what, m->p[i], t->data, t->nbytes / sizeof(float), 1e-4, tol);
    }
    optimizer_free(&o);
    free(refs);
}

void modelcheck_fixture(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/%s.sxt", name);
    tensorfile f;
    if (!CHECK(tf_read(path, "fixture", &f) == SX_OK)) { fprintf(stderr, "  %s\n", sx_last_error()); return; }
    const char *desc = json_string_value(json_object_get(f.meta, "descriptor"));
    size_t B = (size_t)json_integer_value(json_object_get(f.meta, "B"));
    size_t T = (size_t)json_integer_value(json_object_get(f.meta, "T"));
    model_config c;
    model m;
    if (!CHECK(desc && model_config_parse(desc, 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) { tf_free(&f); return; }
    CHECK(model_reserve(&m, B, T) == SX_OK);
    load_params(&m, &f, "param");
    const tf_tensor *tok = need(&f, "tokens"), *logits = need(&f, "logits"), *loss = need(&f, "loss");
    if (tok && logits && loss) {
        float *z = malloc(logits->nbytes);
        double l;
        CHECK(model_loss(&m, tok->data, z, &l) == SX_OK);
        l += model_aux_loss(&m);
        CHECK_CLOSE(l, ((float *)loss->data)[0], 1e-5, 0);
        close_tensor("logits", z, logits->data, logits->nbytes / sizeof(float), 1e-4, 0);
        free(z);
        model_zero_grad(&m);
        model_loss_and_grad(&m, tok->data, 1.0f);
        for (size_t i = 0; i < m.table.n; i++) {
            char gname[128];
            snprintf(gname, sizeof gname, "grad.%s", m.table.v[i].name);
            const tf_tensor *g = need(&f, gname);
            if (g) close_tensor(gname, m.g[i], g->data, g->nbytes / sizeof(float), 1e-4, 0);
        }
        check_optimizer(path, &f, &m, tok->data, OPT_ADAMW);
        check_optimizer(path, &f, &m, tok->data, OPT_MUON);
    }
    model_free(&m);
    tf_free(&f);
}

