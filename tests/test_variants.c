// Architecture variants (docs/MODEL.md "Variants"): finite-difference gradient checks of MLA, MoE, gated /
// sliding-window / soft-capped attention on tiny configs; golden fixtures from the PyTorch reference
// (tools/ref/make_variant_fixtures.py) for MLA and MoE; MoE routing statistics, selection-bias update and
// auxiliary loss; descriptor parsing; exact FLOP / parameter / KV-cache accounting.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/tensorfile.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "scale/flops.h"
#include "support/testlib.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

// Every tensor random and non-zero (gains near 1). Routers get 4× the usual scale so the top-k choices have
// clear margins and the finite-difference steps below never flip a routing decision.
static void randomize(model *m, uint64_t seed) {
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

// The training objective: mean cross-entropy plus the auxiliary loss of the same forward.
static double objective(model *m, const int32_t *tok) {
    double l = model_loss(m, tok, NULL);
    return l + model_aux_loss(m);
}

// Directional central differences per tensor, along the gradient and along a random unit direction. The step
// moves the objective by ~1e-3 (small enough that no MoE routing decision flips; fp32 noise of the loss is
// still < 1e-3·‖g‖); tolerance 1e-2·‖g‖ as in tests/test_model.c.
// The MoE selection bias has no gradient by definition: its gradient must be exactly zero.
static void gradcheck(const char *descriptor) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse(descriptor, 0, &c) == SX_OK)) { fprintf(stderr, "  %s\n", sx_last_error()); return; }
    if (!CHECK(model_init(&m, &c) == SX_OK)) return;
    size_t B = 2, T = 7;
    CHECK(model_reserve(&m, B, T) == SX_OK);
    randomize(&m, 11);
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

static void test_gradcheck_gqa_gate_swa_attcap(void) { gradcheck("d3-w32-hd8-kv2-gate-swa3-local2-attcap4-v50"); }
static void test_gradcheck_gqa_qknorm_gate_swa(void) { gradcheck("d1-w32-hd8-qknorm-gate-swa2-v50"); }
static void test_gradcheck_mla(void) { gradcheck("d2-w32-hd8-mla-dc16-rd4-v50"); }
static void test_gradcheck_mla_qlatent_padded_gate(void) { gradcheck("d2-w32-hd8-mla-dc12-dcq16-rd4-nope6-gate-v50"); }
static void test_gradcheck_mla_nope_nonorm_swa(void) { gradcheck("d1-w32-hd8-mla-dc16-rd0-nolatnorm-swa4-attcap3-v50"); }
static void test_gradcheck_moe_softmax_aux(void) { gradcheck("d2-w32-hd8-moe4k2-ew24-aux0.1-v50"); }
static void test_gradcheck_moe_swiglu_shared_sigmoid_bias(void) {
    gradcheck("d2-w32-hd8-swiglu-moe4k2-ew16-shared1-sigmoid-balance=bias-aux0.05-v50");
}
static void test_gradcheck_moe_gelu_top1_aux(void) { gradcheck("d1-w32-hd8-gelu-moe3k1-ew16-aux0.1-v50"); }

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
        double l = model_loss(&m, tok->data, z) + model_aux_loss(&m);
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

static void test_fixture_mla(void) { check_fixture("mla_qlatent_gate"); }
static void test_fixture_mla_padded(void) { check_fixture("mla_padded_swa"); }
static void test_fixture_moe_softmax_aux(void) { check_fixture("moe_softmax_aux_shared"); }
static void test_fixture_moe_sigmoid_bias(void) { check_fixture("moe_swiglu_sigmoid_bias"); }
static void test_fixture_gqa_gate_swa_attcap(void) { check_fixture("gqa_gate_swa_attcap"); }

// ---- MoE routing statistics, selection-bias balancing, auxiliary loss ----
// With one expert forced to win every token (a huge selection bias) it receives every top-1 slot of both
// micro-batches; the JSON reports it; one after-step lowers its bias by the rate and raises the others by it.
static void test_moe_stats_and_bias_update(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d1-w32-hd8-moe4k1-ew16-balance=bias-brate0.25-v50", 0, &c) == SX_OK)) return;
    if (!CHECK(model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, 2, 7) == SX_OK);
    randomize(&m, 3);
    long ib = param_table_find(&m.table, "l0.router_bias");
    if (!CHECK(ib >= 0 && m.table.v[ib].rows * m.table.v[ib].cols == 4)) { model_free(&m); return; }
    float *bias = m.p[ib];
    bias[0] = 0, bias[1] = 0, bias[2] = 50, bias[3] = 0;   // softmax scores are in (0,1): expert 2 always wins
    int32_t tok[16];
    for (size_t i = 0; i < 16; i++) tok[i] = (int32_t)(i * 7 % 50);
    CHECK(model_moe_stats_json(&m) != NULL);
    model_zero_grad(&m);
    model_loss_and_grad(&m, tok, 1.0f);
    model_loss_and_grad(&m, tok, 1.0f);          // two micro-batches accumulate
    CHECK(m.stats_acc[2] == 28 && m.stats_acc[0] == 0);
    CHECK(m.g[ib][0] == 0 && m.g[ib][2] == 0);   // no gradient into the bias
    model_after_step(&m);
    CHECK(bias[2] == 50 - 0.25f && bias[0] == 0.25f && bias[1] == 0.25f && bias[3] == 0.25f);
    CHECK(m.stats_acc[2] == 0 && m.stats_last[2] == 28);
    json_t *j = model_moe_stats_json(&m);
    json_t *load = json_array_get(json_object_get(j, "moe_load"), 0);
    CHECK(json_array_size(load) == 4);
    CHECK_CLOSE(json_real_value(json_array_get(load, 2)), 1.0, 0, 1e-12);
    CHECK_CLOSE(json_real_value(json_array_get(json_object_get(j, "moe_max_load"), 0)), 4.0, 0, 1e-12);
    json_decref(j);
    model_free(&m);
    // A dense model has no statistics and no auxiliary loss.
    CHECK(model_config_parse("d1-w32-hd8-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK);
    CHECK(model_moe_stats_json(&m) == NULL && model_aux_loss(&m) == 0);
    model_after_step(&m);
    model_free(&m);
}

// Switch loss at perfect balance is coef: with all router weights zero, softmax scores are uniform (1/E),
// so P_e = 1/E and Σ_e f_e = 1 give coef·E·Σ f_e/E = coef, whatever the (tie-broken) routing.
static void test_moe_aux_loss_value(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d2-w32-hd8-moe4k2-ew16-aux0.03-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, 1, 5) == SX_OK);
    randomize(&m, 4);
    for (size_t l = 0; l < 2; l++) {
        char name[32];
        snprintf(name, sizeof name, "l%zu.router", l);
        long i = param_table_find(&m.table, name);
        memset(m.p[i], 0, m.table.v[i].rows * m.table.v[i].cols * sizeof(float));
    }
    int32_t tok[6] = {1, 2, 3, 4, 5, 6};
    model_loss(&m, tok, NULL);
    CHECK_CLOSE(model_aux_loss(&m), 2 * 0.03, 1e-6, 0);
    model_free(&m);
}

// ---- descriptors ----
static void test_descriptors(void) {
    model_config c;
    const char *bad[] = {"d2-dc16", "d2-mla-kv2", "d2-mla-qknorm", "d2-mla-rd3", "d2-hd8-mla-rd16", "d2-moe4k5",
                         "d2-moe0k0", "d2-ew32", "d2-sigmoid", "d2-balance=bias", "d2-local2", "d2-swa0",
                         "d2-moe4k2x", "d2-aux", "d2-mla-ropefrac0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (!CHECK(model_config_parse(bad[i], 0, &c) == SX_ERR_ARG)) fprintf(stderr, "  accepted '%s'\n", bad[i]);
        CHECK(strlen(sx_last_error()) > 10);
    }
    CHECK(model_config_parse("d6-mla", 0, &c) == SX_OK && c.mixer == MIXER_MLA && c.mla_dc == 256 &&
          c.mla_rope == 32 && c.mla_nope == 32 && c.mla_dcq == 0 && c.rope_dim == 32 && c.mla_latent_norm);
    CHECK(model_config_parse("d6-moe8k2-shared1-sigmoid-aux0.01-balance=bias", 0, &c) == SX_OK && c.n_expert == 8 &&
          c.top_k == 2 && c.expert_hidden == 1536 && c.n_shared == 1 && c.router_sigmoid && c.bias_balance &&
          fabsf(c.aux_coef - 0.01f) < 1e-9f && fabsf(c.bias_rate - 1e-3f) < 1e-9f);
    CHECK(model_config_parse("d4-swa128-local2-gate-attcap30", 0, &c) == SX_OK && c.window == 128 && c.attn_gate &&
          c.attn_softcap == 30.0f);
    CHECK(model_config_layer_is_local(&c, 0) && !model_config_layer_is_local(&c, 1) &&
          model_config_layer_is_local(&c, 2) && !model_config_layer_is_local(&c, 3));
    json_t *j = model_config_to_json(&c);
    CHECK(json_integer_value(json_object_get(j, "window")) == 128);
    json_decref(j);
}

// ---- accounting ----
// The FLOP module's total parameter count equals the model's table for every variant; MoE active = total
// minus the unchosen experts; MLA's KV cache is d_c + d_rope floats per layer; a window caps the keys.
static void test_flops_accounting(void) {
    const char *descs[] = {"d2-w32-hd8-kv2-gate-v50", "d2-w32-hd8-mla-dc16-dcq12-rd4-gate-v50",
                           "d2-w32-hd8-mla-dc16-rd4-nope6-nolatnorm-v50", "d2-w32-hd8-swiglu-moe6k2-ew16-shared1-balance=bias-v50",
                           "d3-w48-hd16-moe8k1-untied-v50"};
    for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
        model_config c;
        model m;
        if (!CHECK(model_config_parse(descs[i], 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) continue;
        model_flops f = model_flops_count(&c, 64);
        if (!CHECK(f.params_total == (double)model_param_count(&m)))
            fprintf(stderr, "  %s: flops total %.0f, table %zu\n", descs[i], f.params_total, model_param_count(&m));
        CHECK(f.params_nonembed == (double)model_param_count_nonembed(&m));
        model_free(&m);
    }
    model_config c;
    CHECK(model_config_parse("d2-w32-hd8-swiglu-moe6k2-ew16-shared1-v50", 0, &c) == SX_OK);
    model_flops f = model_flops_count(&c, 64);
    CHECK(f.params_total - f.params_active == 2.0 * 4 * 3 * 32 * 16);       // 4 unchosen SwiGLU experts per layer
    CHECK(f.params_matmul == 2.0 * (4 * 32 * 32 + (2 + 1) * 3 * 32 * 16 + 6 * 32) + 50 * 32);
    CHECK(model_config_parse("d3-w32-hd8-mla-dc16-rd4-v50", 0, &c) == SX_OK);
    CHECK(model_flops_count(&c, 64).kv_cache_bytes_per_token == 3.0 * (16 + 4) * 4);
    // Window 4 on both layers of d2 (no global layer), T = 8: mean keys (1+2+3+4 + 4·4)/8 = 26/8; with local1
    // every layer is global: (T+1)/2 = 4.5. Per head and key 2·(hd + hd) FLOPs.
    CHECK(model_config_parse("d2-w32-hd8-swa4-v50", 0, &c) == SX_OK);
    CHECK_CLOSE(model_flops_count(&c, 8).fwd_attention_per_token, 2 * 4 * (26.0 / 8) * 2 * 16, 1e-12, 0);
    CHECK(model_config_parse("d2-w32-hd8-swa4-local1-v50", 0, &c) == SX_OK);
    CHECK_CLOSE(model_flops_count(&c, 8).fwd_attention_per_token, 2 * 4 * 4.5 * 2 * 16, 1e-12, 0);
}

int main(void) {
    TEST_RUN(test_moe_stats_and_bias_update);
    TEST_RUN(test_moe_aux_loss_value);
    TEST_RUN(test_descriptors);
    TEST_RUN(test_flops_accounting);
    TEST_RUN(test_gradcheck_gqa_gate_swa_attcap);
    TEST_RUN(test_gradcheck_gqa_qknorm_gate_swa);
    TEST_RUN(test_gradcheck_mla);
    TEST_RUN(test_gradcheck_mla_qlatent_padded_gate);
    TEST_RUN(test_gradcheck_mla_nope_nonorm_swa);
    TEST_RUN(test_gradcheck_moe_softmax_aux);
    TEST_RUN(test_gradcheck_moe_swiglu_shared_sigmoid_bias);
    TEST_RUN(test_gradcheck_moe_gelu_top1_aux);
    TEST_RUN(test_fixture_mla);
    TEST_RUN(test_fixture_mla_padded);
    TEST_RUN(test_fixture_moe_softmax_aux);
    TEST_RUN(test_fixture_moe_sigmoid_bias);
    TEST_RUN(test_fixture_gqa_gate_swa_attcap);
    return testlib_finish("variants");
}
