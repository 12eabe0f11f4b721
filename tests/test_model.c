// Whole-model tests: finite-difference gradient checks for every option of the dense model, and the
// golden fixtures produced by the independent PyTorch reference (tools/ref/) — logits, loss, every
// gradient, and parameters after AdamW and Muon steps.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/tensorfile.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "support/testlib.h"

// Every tensor random and non-zero (gains near 1), so no gradient is trivially zero.
static void randomize(model *m, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        size_t n = s->rows * s->cols;
        rng_fill_normal(&r, m->p[i], n, s->group == PGROUP_GAIN ? 0.1f : 1.0f / sqrtf((float)s->cols));
        if (s->group == PGROUP_GAIN)
            for (size_t j = 0; j < n; j++) m->p[i][j] += 1.0f;
    }
}

static void random_tokens(int32_t *tok, size_t n, size_t V, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) tok[i] = (int32_t)rng_below(&r, V);
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// Directional finite differences per tensor: along the gradient itself and along a random unit direction,
// (L(θ+εd) − L(θ−εd)) / 2ε must match g·d. The step ε is chosen so the loss moves by ~1e-2: fp32 evaluation
// noise of the loss (~1e-6 relative, loss ~4) then contributes < 1e-3 of ‖g‖ and the O(ε²) truncation is
// smaller still on these smooth functions, so a tolerance of 1e-2·‖g‖ separates correct gradients from
// wrong ones (a wrong term typically changes g·d by O(‖g‖)).
static void gradcheck(const char *descriptor) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse(descriptor, 0, &c) == SX_OK)) return;
    if (!CHECK(model_init(&m, &c) == SX_OK)) return;
    size_t B = 2, T = 7;
    CHECK(model_reserve(&m, B, T) == SX_OK);
    randomize(&m, 11);
    int32_t tok[2 * 8];
    random_tokens(tok, B * (T + 1), c.vocab, 5);
    model_zero_grad(&m);
    model_loss_and_grad(&m, tok, 1.0f);
    rng_state r;
    rng_seed(&r, 99);
    size_t bad = 0;
    for (size_t i = 0; i < m.table.n; i++) {
        const param_spec *s = &m.table.v[i];
        size_t n = s->rows * s->cols;
        float *p = m.p[i], *g = m.g[i], *dir = malloc(n * sizeof *dir), *saved = malloc(n * sizeof *saved);
        memcpy(saved, p, n * sizeof *p);
        double gnorm = sqrt(dot(g, g, n));
        for (int which = 0; which < 2; which++) {
            if (which == 0) for (size_t j = 0; j < n; j++) dir[j] = (float)(g[j] / gnorm);
            else {
                rng_fill_normal(&r, dir, n, 1.0f);
                double dn = sqrt(dot(dir, dir, n));
                for (size_t j = 0; j < n; j++) dir[j] = (float)(dir[j] / dn);
            }
            double eps = 1e-2 / (gnorm > 1e-3 ? gnorm : 1e-3);
            if (eps > 0.1) eps = 0.1;
            double lp, lm;
            for (size_t j = 0; j < n; j++) p[j] = saved[j] + (float)(eps * dir[j]);
            lp = model_loss(&m, tok, NULL);
            for (size_t j = 0; j < n; j++) p[j] = saved[j] - (float)(eps * dir[j]);
            lm = model_loss(&m, tok, NULL);
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

static void test_gradcheck_mha_relu2_tied(void) { gradcheck("d2-w32-hd8-v50"); }
static void test_gradcheck_gqa_swiglu_qknorm_untied(void) { gradcheck("d2-w32-hd8-kv2-swiglu-qknorm-untied-v50"); }
static void test_gradcheck_mqa_gelu_partial_rope_softcap(void) { gradcheck("d2-w32-hd8-kv1-gelu-ropefrac0.5-rope500-softcap5-v50"); }
static void test_gradcheck_no_rope(void) { gradcheck("d1-w24-hd8-ropefrac0-ff40-v40"); }

// ---- golden fixtures ----
static const tf_tensor *need(const tensorfile *f, const char *name) {
    const tf_tensor *t = tf_find(f, name);
    if (!t) fprintf(stderr, "  fixture tensor %s missing\n", name);
    return t;
}

// Per-tensor tolerance: rtol 1e-4 relative to each element plus 1e-4 of the tensor's largest magnitude
// (the fixtures are computed in float64; ours in fp32 with different summation order).
static bool close_tensor(const char *what, const float *got, const float *want, size_t n, double rtol, double atol) {
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(want[i]));
    size_t wi;
    double e = testlib_max_rel_err(got, want, n, rtol, rtol * mx + atol + 1e-12, &wi);
    if (e > 1) fprintf(stderr, "  %s[%zu]: got %.8g want %.8g (normalised error %.3g)\n", what, wi, got[wi], want[wi], e);
    return CHECK(e <= 1);
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

static void run_optimizer(const char *path, const tensorfile *f, model *m, const int32_t *tok, optimizer_kind kind) {
    json_t *a = json_object_get(f->meta, "adamw"), *mu = json_object_get(f->meta, "muon");
    optimizer_config oc;
    optimizer_config_default(&oc);
    oc.kind = kind;
    oc.lr = (float)json_number_value(json_object_get(a, "lr"));
    oc.beta1 = (float)json_number_value(json_object_get(a, "beta1"));
    oc.beta2 = (float)json_number_value(json_object_get(a, "beta2"));
    oc.eps = (float)json_number_value(json_object_get(a, "eps"));
    oc.weight_decay = (float)json_number_value(json_object_get(a, "wd"));
    oc.clip_norm = (float)json_number_value(json_object_get(a, "clip"));
    oc.muon_lr = (float)json_number_value(json_object_get(mu, "lr"));
    oc.muon_momentum = (float)json_number_value(json_object_get(mu, "momentum"));
    oc.muon_weight_decay = (float)json_number_value(json_object_get(mu, "wd"));
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
    const char *prefix = kind == OPT_MUON ? "muon" : "adamw";
    for (size_t i = 0; i < m->table.n; i++) {
        char name[128], what[160];
        snprintf(name, sizeof name, "%s%ld.%s", prefix, steps, m->table.v[i].name);
        snprintf(what, sizeof what, "%s %s", path, name);
        const tf_tensor *t = need(f, name);
        // Adam and Muon normalise the update, so an element whose gradient history nearly cancels can amplify
        // fp32-vs-float64 gradient differences; no element can move more than lr per step, and we allow 1% of
        // that total movement on top of rtol 1e-4.
        double lr_max = fmax(oc.lr, kind == OPT_MUON ? oc.muon_lr * 2 : 0);
        if (t) close_tensor(what, m->p[i], t->data, t->nbytes / sizeof(float), 1e-4, 0.01 * lr_max * (double)steps);
    }
    optimizer_free(&o);
    free(refs);
}

static void check_fixture(const char *name) {
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
        double l = model_loss(&m, tok->data, z);
        CHECK_CLOSE(l, ((float *)loss->data)[0], 1e-5, 0);
        close_tensor("logits", z, logits->data, logits->nbytes / sizeof(float), 1e-4, 0);
        free(z);
        model_zero_grad(&m);
        double l2 = model_loss_and_grad(&m, tok->data, 1.0f);
        CHECK(l2 == l);
        for (size_t i = 0; i < m.table.n; i++) {
            char gname[128];
            snprintf(gname, sizeof gname, "grad.%s", m.table.v[i].name);
            const tf_tensor *g = need(&f, gname);
            if (g) close_tensor(gname, m.g[i], g->data, g->nbytes / sizeof(float), 1e-4, 0);
        }
        run_optimizer(path, &f, &m, tok->data, OPT_ADAMW);
        run_optimizer(path, &f, &m, tok->data, OPT_MUON);
    }
    model_free(&m);
    tf_free(&f);
}

static void test_fixture_mha_relu2_tied(void) { check_fixture("mha_relu2_tied"); }
static void test_fixture_gqa_swiglu_qknorm_untied(void) { check_fixture("gqa_swiglu_qknorm_untied"); }
static void test_fixture_gelu_mqa(void) { check_fixture("gelu_mqa"); }

static void test_bad_descriptors(void) {
    model_config c;
    const char *bad[] = {"x6", "d0", "d6-foo", "d6-hd100", "d6-kv5", "d6-kv0", "d6-ropefrac2", "d6-kv", "d2-w30-hd8", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sx_status s = model_config_parse(bad[i], 0, &c);
        if (!CHECK(s == SX_ERR_ARG)) fprintf(stderr, "  accepted '%s'\n", bad[i]);
        CHECK(strlen(sx_last_error()) > 10);
    }
    CHECK(model_config_parse("d12", 0, &c) == SX_OK && c.width == 768 && c.n_head == 12 && c.n_kv_head == 12);
    CHECK(model_config_parse("d6-kv2-swiglu", 0, &c) == SX_OK && c.n_kv_head == 2 && c.ffn_hidden == 1024);
}

int main(void) {
    TEST_RUN(test_bad_descriptors);
    TEST_RUN(test_gradcheck_mha_relu2_tied);
    TEST_RUN(test_gradcheck_gqa_swiglu_qknorm_untied);
    TEST_RUN(test_gradcheck_mqa_gelu_partial_rope_softcap);
    TEST_RUN(test_gradcheck_no_rope);
    TEST_RUN(test_fixture_mha_relu2_tied);
    TEST_RUN(test_fixture_gqa_swiglu_qknorm_untied);
    TEST_RUN(test_fixture_gelu_mqa);
    return testlib_finish("model");
}
