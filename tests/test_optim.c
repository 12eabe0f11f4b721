// Optimizer tests: AdamW, Muon, AdamH, MuonH and cautious weight decay against independent scalar
// computations in double, hand-computed values, a PyTorch fixture (tools/ref/make_optim_fixtures.py),
// clipping, weight-decay groups, non-finite gradients, and state save/restore round trips that must continue
// bit for bit.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/tensorfile.h"
#include "optim/muon.h"
#include "optim/optimizer.h"
#include "support/testlib.h"

// ---- independent references (double, written from docs/MODEL.md, sharing no code with src/optim) ----

// Adam's moments and direction u = m̂/(sqrt(v̂) + eps) (m, v, u overwritten).
static void ref_adam_dir(const double *g, double *m, double *v, size_t n, double b1, double b2, double eps, long t,
                         double *u) {
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        double mhat = m[i] / (1 - pow(b1, (double)t)), vhat = v[i] / (1 - pow(b2, (double)t));
        u[i] = mhat / (sqrt(vhat) + eps);
    }
}

// AdamW; cautious: the decay only where u·p >= 0.
static void ref_adamw(double *p, const double *g, double *m, double *v, size_t n, double lr, double b1,
                      double b2, double eps, double wd, long t, bool cautious) {
    double *u = malloc(n * sizeof *u);
    ref_adam_dir(g, m, v, n, b1, b2, eps, t, u);
    for (size_t i = 0; i < n; i++) {
        if (!cautious || u[i] * p[i] >= 0) p[i] *= 1 - lr * wd;
        p[i] -= lr * u[i];
    }
    free(u);
}

// p = R·normalize(p − lr·R·normalize(u)).
static void ref_hyperball(double *p, const double *u, size_t n, double radius, double lr) {
    double uu = 0, pp = 0;
    for (size_t i = 0; i < n; i++) uu += u[i] * u[i];
    for (size_t i = 0; i < n; i++) p[i] -= lr * radius * u[i] / sqrt(uu);
    for (size_t i = 0; i < n; i++) pp += p[i] * p[i];
    for (size_t i = 0; i < n; i++) p[i] *= radius / sqrt(pp);
}

// out (rows, cols) = NS5(u), naive triple loops in double.
static void ref_ns5(const double *u, size_t rows, size_t cols, double *out) {
    const double a = 3.4445, b = -4.7750, c = 2.0315;
    int tr = rows > cols;
    size_t r = tr ? cols : rows, k = tr ? rows : cols;
    double *x = malloc(r * k * sizeof *x), *A = malloc(r * r * sizeof *A), *B = malloc(r * r * sizeof *B),
           *xn = malloc(r * k * sizeof *xn);
    double ss = 0;
    for (size_t i = 0; i < rows * cols; i++) ss += u[i] * u[i];
    double nrm = sqrt(ss) + 1e-7;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            if (tr) x[j * k + i] = u[i * cols + j] / nrm;
            else x[i * k + j] = u[i * cols + j] / nrm;
        }
    for (int it = 0; it < 5; it++) {
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < r; j++) {
                double s = 0;
                for (size_t l = 0; l < k; l++) s += x[i * k + l] * x[j * k + l];
                A[i * r + j] = s;
            }
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < r; j++) {
                double s = 0;
                for (size_t l = 0; l < r; l++) s += A[i * r + l] * A[l * r + j];
                B[i * r + j] = b * A[i * r + j] + c * s;
            }
        for (size_t i = 0; i < r; i++)
            for (size_t j = 0; j < k; j++) {
                double s = 0;
                for (size_t l = 0; l < r; l++) s += B[i * r + l] * x[l * k + j];
                xn[i * k + j] = a * x[i * k + j] + s;
            }
        memcpy(x, xn, r * k * sizeof *x);
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) out[i * cols + j] = tr ? x[j * k + i] : x[i * k + j];
    free(x);
    free(A);
    free(B);
    free(xn);
}

// Muon's momentum and orthogonalised direction x (buf, x overwritten).
static void ref_muon_dir(const double *g, double *buf, size_t rows, size_t cols, double mu, double *x) {
    size_t n = rows * cols;
    double *u = malloc(n * sizeof *u);
    for (size_t i = 0; i < n; i++) {
        buf[i] = mu * buf[i] + (1 - mu) * g[i];
        u[i] = (1 - mu) * g[i] + mu * buf[i];
    }
    ref_ns5(u, rows, cols, x);
    free(u);
}

// Muon; cautious: the decay only where x·p >= 0.
static void ref_muon(double *p, const double *g, double *buf, size_t rows, size_t cols, double lr, double mu,
                     double wd, bool cautious) {
    size_t n = rows * cols;
    double *x = malloc(n * sizeof *x);
    ref_muon_dir(g, buf, rows, cols, mu, x);
    double scale = sqrt(fmax(1.0, (double)rows / (double)cols));
    for (size_t i = 0; i < n; i++) p[i] = (!cautious || x[i] * p[i] >= 0 ? p[i] * (1 - lr * wd) : p[i]) - lr * scale * x[i];
    free(x);
}

// ---- helpers ----

static rng_state rng;

static float *randn(size_t n, float std) {
    float *x = malloc(n * sizeof *x);
    rng_fill_normal(&rng, x, n, std);
    return x;
}

static double *to_double(const float *x, size_t n) {
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static void check_close_d(const float *got, const double *want, size_t n, double rtol, double atol,
                          const char *what) {
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) w[i] = (float)want[i];
    testlib_arrays_close(got, w, n, rtol, atol, __FILE__, __LINE__, what);
    free(w);
}

static optimizer_config test_config(optimizer_kind kind) {
    optimizer_config c;
    optimizer_config_default(&c);
    c.kind = kind;
    c.lr = 0.01f;
    c.weight_decay = 0.1f;
    c.muon_lr = 0.05f;
    c.muon_weight_decay = 0.2f;
    c.clip_norm = 0;
    return c;
}

// ---- cases ----

// One AdamW step on one scalar, worked by hand: with zero state, m̂ = g and v̂ = g², so
// p1 = p0·(1 − lr·wd) − lr·g/(|g| + eps) = 1·(1 − 0.1·0.1) − 0.1·0.5/(0.5 + 1e-8) = 0.89.
static void test_adamw_hand(void) {
    float p = 1.0f, g = 0.5f;
    param_ref ref = {"w", &p, &g, 1, 1, PGROUP_MATRIX};
    optimizer_config c = test_config(OPT_ADAMW);
    c.lr = 0.1f;
    optimizer o;
    CHECK(optimizer_init(&o, &c, &ref, 1) == SX_OK);
    double norm = optimizer_step(&o, 1.0);
    CHECK_CLOSE(norm, 0.5, 0, 0);
    CHECK_CLOSE(p, 0.89, 1e-6, 0);
    CHECK(o.t == 1);
    // Second step with g = -0.5: m = 0.95·... worked: m = 0.9·0.05 − 0.1·0.5 = −0.005, m̂ = −0.005/0.19;
    // v = 0.95·0.0125 + 0.05·0.25 = 0.024375, v̂ = v/(1 − 0.9025) = 0.25, so the step is
    // −0.1·(−0.026315789)/(0.5 + 1e-8) = +0.0052631578; p2 = 0.89·0.99 + 0.0052631578 = 0.8863631578.
    g = -0.5f;
    optimizer_step(&o, 1.0);
    CHECK_CLOSE(p, 0.8863631578, 1e-6, 0);
    optimizer_free(&o);
}

// newton_schulz5 against the naive double implementation, wide, tall, square, vector and larger shapes.
static void test_ns5_reference(void) {
    const size_t shapes[][2] = {{3, 5}, {5, 3}, {1, 4}, {4, 1}, {7, 7}, {16, 40}, {64, 24}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t r = shapes[s][0], c = shapes[s][1], n = r * c;
        float *u = randn(n, 2.0f), *out = malloc(n * sizeof *out);
        float *scratch = malloc(newton_schulz5_scratch(r, c) * sizeof *scratch);
        double *ud = to_double(u, n), *want = malloc(n * sizeof *want);
        newton_schulz5(u, r, c, out, scratch);
        ref_ns5(ud, r, c, want);
        check_close_d(out, want, n, 1e-4, 1e-5, "newton_schulz5");
        free(u);
        free(out);
        free(scratch);
        free(ud);
        free(want);
    }
}

// NS5 of a scaled orthogonal matrix: X/(||X||_F) of Q (k x k, orthogonal) has every singular value
// 1/sqrt(k); the quintic maps s -> a·s + b·s³ + c·s⁵, so the output is Q times that scalar iterated 5 times.
static void test_ns5_orthogonal(void) {
    const size_t k = 4;
    // A 4x4 orthogonal matrix: a Hadamard matrix / 2.
    const float h[16] = {1, 1, 1, 1, 1, -1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1};
    float q[16], out[16], scratch[64];
    for (int i = 0; i < 16; i++) q[i] = 0.5f * h[i];
    double s = 1.0 / (2.0 + 1e-7); // ||Q||_F = sqrt(k) = 2
    for (int it = 0; it < 5; it++) s = 3.4445 * s - 4.7750 * s * s * s + 2.0315 * pow(s, 5);
    CHECK(newton_schulz5_scratch(k, k) <= 64);
    newton_schulz5(q, k, k, out, scratch);
    for (int i = 0; i < 16; i++) CHECK_CLOSE(out[i], s * q[i], 1e-5, 1e-6);
}

// Several steps of `kind` (cautious decay or not) on tensors of every group and several shapes, with a changing
// lr_mult, against the double references per docs/MODEL.md's routing: MATRIX by the kind, the rest AdamW (HEAD
// decayed, GAIN and EMBED not). Hyperball matrices must stay on their initial norm to 1e-6 after every step.
static void check_kind_reference(optimizer_kind kind, bool cautious) {
    enum { N = 6 };
    const size_t shapes[N][2] = {{6, 4}, {3, 8}, {5, 5}, {1, 8}, {4, 3}, {7, 3}};
    const param_group groups[N] = {PGROUP_MATRIX, PGROUP_MATRIX, PGROUP_MATRIX, PGROUP_GAIN, PGROUP_HEAD, PGROUP_EMBED};
    const char *names[N] = {"tall", "wide", "square", "gain", "head", "emb"};
    const bool hyper = kind == OPT_ADAMH || kind == OPT_MUONH, muon = kind == OPT_MUON || kind == OPT_MUONH;
    optimizer_config c = test_config(kind);
    c.cautious_wd = cautious;
    c.hyper_lr = 0.05f;
    param_ref refs[N];
    double *pd[N], *md[N], *vd[N], radius[N];
    for (int k = 0; k < N; k++) {
        size_t n = shapes[k][0] * shapes[k][1];
        refs[k] = (param_ref){names[k], randn(n, 0.5f), randn(n, 1.0f), shapes[k][0], shapes[k][1], groups[k]};
        pd[k] = to_double(refs[k].data, n);
        md[k] = calloc(n, sizeof(double));
        vd[k] = calloc(n, sizeof(double));
        double ss = 0;
        for (size_t i = 0; i < n; i++) ss += pd[k][i] * pd[k][i];
        radius[k] = sqrt(ss);
    }
    optimizer o;
    CHECK(optimizer_init(&o, &c, refs, N) == SX_OK);
    for (int step = 1; step <= 4; step++) {
        double mult = 1.0 / step;
        for (int k = 0; k < N; k++) {
            size_t n = shapes[k][0] * shapes[k][1];
            rng_fill_normal(&rng, refs[k].grad, n, 1.0f);
            double *gd = to_double(refs[k].grad, n), *u = malloc(n * sizeof *u);
            if (groups[k] == PGROUP_MATRIX && hyper) {
                if (muon) ref_muon_dir(gd, md[k], shapes[k][0], shapes[k][1], c.muon_momentum, u);
                else ref_adam_dir(gd, md[k], vd[k], n, c.beta1, c.beta2, c.eps, step, u);
                ref_hyperball(pd[k], u, n, radius[k], c.hyper_lr * mult);
            } else if (groups[k] == PGROUP_MATRIX && muon) {
                ref_muon(pd[k], gd, md[k], shapes[k][0], shapes[k][1], c.muon_lr * mult, c.muon_momentum,
                           c.muon_weight_decay, cautious);
            } else {
                double wd = groups[k] == PGROUP_MATRIX || groups[k] == PGROUP_HEAD ? c.weight_decay : 0.0;
                ref_adamw(pd[k], gd, md[k], vd[k], n, c.lr * mult, c.beta1, c.beta2, c.eps, wd, step, cautious);
            }
            free(gd);
            free(u);
        }
        optimizer_step(&o, mult);
        for (int k = 0; k < N && hyper; k++) {
            if (groups[k] != PGROUP_MATRIX) continue;
            double norm = sqrt(optim_sumsq(refs[k].data, shapes[k][0] * shapes[k][1]));
            CHECK(fabs(norm / radius[k] - 1) <= 1e-6);
            CHECK(o.slots[k].radius && *o.slots[k].radius == (float)radius[k]);
        }
    }
    for (int k = 0; k < N; k++) {
        check_close_d(refs[k].data, pd[k], shapes[k][0] * shapes[k][1], 1e-5, 1e-6, names[k]);
        free(refs[k].data);
        free(refs[k].grad);
        free(pd[k]);
        free(md[k]);
        free(vd[k]);
    }
    optimizer_free(&o);
}

static void test_adamw_muon_reference(void) {
    check_kind_reference(OPT_ADAMW, false);
    check_kind_reference(OPT_MUON, false);
}

static void test_hyperball_reference(void) {
    check_kind_reference(OPT_ADAMH, false);
    check_kind_reference(OPT_MUONH, false);
    check_kind_reference(OPT_ADAMH, true);   // cautious decay reaches only the AdamW head under the hyperball
}

static void test_cautious_reference(void) {
    check_kind_reference(OPT_ADAMW, true);
    check_kind_reference(OPT_MUON, true);
}

// Cautious decay by hand: at step 1 Adam's direction is sign(g)·|g|/(|g| + eps), so with p = (2, 2, −2, −2) and
// g = (1, −1, 1, −1) the update has p's sign at coordinates 0 and 3 (decayed) and the opposite sign at 1 and 2
// (left undecayed): p1 = p·(1 − lr·wd)·[same sign] − lr·u.
static void test_cautious_hand(void) {
    float p[4] = {2, 2, -2, -2}, g[4] = {1, -1, 1, -1};
    param_ref ref = {"w", p, g, 2, 2, PGROUP_MATRIX};
    optimizer_config c = test_config(OPT_ADAMW);
    c.lr = 0.1f;
    c.weight_decay = 0.5f;
    c.cautious_wd = true;
    optimizer o;
    CHECK(optimizer_init(&o, &c, &ref, 1) == SX_OK);
    optimizer_step(&o, 1.0);
    const double u = 1.0 / (1.0 + 1e-8), decayed = 2.0 * (1 - 0.1 * 0.5);
    CHECK_CLOSE(p[0], decayed - 0.1 * u, 1e-6, 0);
    CHECK_CLOSE(p[1], 2.0 + 0.1 * u, 1e-6, 0);
    CHECK_CLOSE(p[2], -2.0 - 0.1 * u, 1e-6, 0);
    CHECK_CLOSE(p[3], -decayed + 0.1 * u, 1e-6, 0);
    optimizer_free(&o);
}

// A hyperball cannot keep a zero matrix on a sphere: init names it; other groups may be zero.
static void test_hyperball_zero_matrix(void) {
    float p[4] = {0}, g[4] = {0}, h[4] = {0};
    param_ref refs[2] = {{"head", h, g, 2, 2, PGROUP_HEAD}, {"l0.w_down", p, g, 2, 2, PGROUP_MATRIX}};
    optimizer_config c = test_config(OPT_MUONH);
    optimizer o;
    CHECK(optimizer_init(&o, &c, refs, 1) == SX_OK);
    optimizer_free(&o);
    CHECK(optimizer_init(&o, &c, refs, 2) == SX_ERR_ARG && strstr(sx_last_error(), "l0.w_down"));
    optimizer_free(&o);
}

// The PyTorch fixture (tools/ref/make_optim_fixtures.py): three AdamH steps (Adam's direction from
// torch.optim.Adam) and three cautious AdamW steps on tensors of four groups, without clipping.
static void test_torch_fixture(void) {
    tensorfile f;
    if (!CHECK(tf_read("tests/fixtures/optim_steps.sxt", "fixture", &f) == SX_OK)) return;
    json_t *adam = json_object_get(f.meta, "adam");
    const int steps = (int)json_integer_value(json_object_get(f.meta, "steps"));
    enum { N = 4 };
    const char *names[N] = {"wq", "w_down", "norm", "head"};
    const param_group groups[N] = {PGROUP_MATRIX, PGROUP_MATRIX, PGROUP_GAIN, PGROUP_HEAD};
    CHECK(steps == 3);
    for (int run = 0; run < 2; run++) {
        optimizer_config c;
        optimizer_config_default(&c);
        c.kind = run ? OPT_ADAMW : OPT_ADAMH;
        c.cautious_wd = run == 1;
        c.lr = (float)json_real_value(json_object_get(adam, "lr"));
        c.beta1 = (float)json_real_value(json_object_get(adam, "beta1"));
        c.beta2 = (float)json_real_value(json_object_get(adam, "beta2"));
        c.eps = (float)json_real_value(json_object_get(adam, "eps"));
        c.weight_decay = (float)json_real_value(json_object_get(adam, "wd"));
        c.hyper_lr = (float)json_real_value(json_object_get(f.meta, "hyper_lr"));
        c.clip_norm = 0;
        param_ref refs[N];
        char name[64];
        for (int k = 0; k < N; k++) {
            snprintf(name, sizeof name, "param.%s", names[k]);
            const tf_tensor *t = tf_find(&f, name);
            if (!CHECK(t && t->ndim == 2)) { tf_free(&f); return; }
            size_t n = t->shape[0] * t->shape[1];
            refs[k] = (param_ref){names[k], malloc(n * sizeof(float)), malloc(n * sizeof(float)), t->shape[0],
                                  t->shape[1], groups[k]};
            memcpy(refs[k].data, t->data, n * sizeof(float));
        }
        optimizer o;
        CHECK(optimizer_init(&o, &c, refs, N) == SX_OK);
        for (int s = 1; s <= steps; s++) {
            for (int k = 0; k < N; k++) {
                snprintf(name, sizeof name, "grad%d.%s", s, names[k]);
                const tf_tensor *t = tf_find(&f, name);
                if (CHECK(t)) memcpy(refs[k].grad, t->data, t->nbytes);
            }
            optimizer_step(&o, 1.0);
            for (int k = 0; k < N; k++) {
                snprintf(name, sizeof name, "%s%d.%s", run ? "cwd" : "adamh", s, names[k]);
                const tf_tensor *t = tf_find(&f, name);
                if (CHECK(t)) testlib_arrays_close(refs[k].data, t->data, refs[k].rows * refs[k].cols, 1e-4, 1e-6,
                                                   __FILE__, __LINE__, name);
            }
        }
        for (int k = 0; k < N; k++) {
            free(refs[k].data);
            free(refs[k].grad);
        }
        optimizer_free(&o);
    }
    tf_free(&f);
}

// Gradient norm and clipping across tensors: grads (3) and (4) have norm 5.
static void test_clipping(void) {
    float p1 = 0, p2 = 0, g1 = 3, g2 = 4;
    param_ref refs[2] = {{"x", &p1, &g1, 1, 1, PGROUP_GAIN}, {"y", &p2, &g2, 1, 1, PGROUP_GAIN}};
    CHECK_CLOSE(grad_global_norm(refs, 2), 5.0, 0, 0);
    CHECK_CLOSE(grad_clip_global_norm(refs, 2, 10.0), 5.0, 0, 0); // below the limit: unchanged
    CHECK(g1 == 3 && g2 == 4);
    CHECK_CLOSE(grad_clip_global_norm(refs, 2, 0.0), 5.0, 0, 0); // disabled
    CHECK(g1 == 3 && g2 == 4);
    CHECK_CLOSE(grad_clip_global_norm(refs, 2, 1.0), 5.0, 0, 0);
    CHECK_CLOSE(g1, 3.0 / (5.0 + 1e-6), 1e-7, 0);
    CHECK_CLOSE(g2, 4.0 / (5.0 + 1e-6), 1e-7, 0);
    CHECK_CLOSE(grad_global_norm(refs, 2), 1.0, 1e-6, 0);

    // optimizer_step clips before the update: a clipped first AdamW step is still lr·sign(g) (Adam is
    // scale-free at t = 1), but the returned norm is the pre-clip one.
    g1 = 30, g2 = -40;
    optimizer_config c = test_config(OPT_ADAMW);
    c.clip_norm = 1.0f;
    optimizer o;
    CHECK(optimizer_init(&o, &c, refs, 2) == SX_OK);
    CHECK_CLOSE(optimizer_step(&o, 1.0), 50.0, 1e-12, 0);
    CHECK_CLOSE(g1, 30.0 / (50.0 + 1e-6), 1e-6, 0);
    CHECK_CLOSE(p1, -0.01, 1e-5, 0);
    CHECK_CLOSE(p2, 0.01, 1e-5, 0);
    optimizer_free(&o);
}

// The global norm of a large array: matches a double reference and is bit-identical for 1 and 2 threads.
static void test_norm_deterministic(void) {
    size_t n = 300001;
    float *g = randn(n, 1.0f), p = 0;
    param_ref refs[2] = {{"big", g, g, 1, n, PGROUP_MATRIX}, {"small", &p, g + 7, 1, 5, PGROUP_GAIN}};
    long double want = 0;
    for (size_t i = 0; i < n; i++) want += (long double)g[i] * g[i];
    for (size_t i = 7; i < 12; i++) want += (long double)g[i] * g[i];
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    double one = grad_global_norm(refs, 2);
    omp_set_num_threads(2);
    double two = grad_global_norm(refs, 2);
    omp_set_num_threads(saved);
    CHECK_CLOSE(one, sqrtl(want), 1e-12, 0);
    CHECK(memcmp(&one, &two, sizeof one) == 0);
    free(g);
}

// Weight-decay groups with zero gradients (so the only change is decay): MATRIX and HEAD decay, GAIN never,
// EMBED only with decay_embed; under Muon, MATRIX decays by muon_lr·muon_wd (NS5 of a zero matrix is 0).
static void test_decay_groups(void) {
    for (int muon = 0; muon <= 1; muon++)
        for (int embed = 0; embed <= 1; embed++) {
            float p[4][4], g[4][4] = {{0}};
            for (int k = 0; k < 4; k++)
                for (int i = 0; i < 4; i++) p[k][i] = 2.0f;
            param_ref refs[4] = {{"m", p[0], g[0], 2, 2, PGROUP_MATRIX},
                                 {"e", p[1], g[1], 2, 2, PGROUP_EMBED},
                                 {"g", p[2], g[2], 1, 4, PGROUP_GAIN},
                                 {"h", p[3], g[3], 2, 2, PGROUP_HEAD}};
            optimizer_config c = test_config(muon ? OPT_MUON : OPT_ADAMW);
            c.decay_embed = embed;
            optimizer o;
            CHECK(optimizer_init(&o, &c, refs, 4) == SX_OK);
            optimizer_step(&o, 0.5);
            double adam = 2.0 * (1 - 0.5 * 0.01 * 0.1), mu = 2.0 * (1 - 0.5 * 0.05 * 0.2);
            CHECK_CLOSE(p[0][3], muon ? mu : adam, 1e-7, 0);
            CHECK_CLOSE(p[1][0], embed ? adam : 2.0, 1e-7, 0);
            CHECK_CLOSE(p[2][1], 2.0, 0, 0);
            CHECK_CLOSE(p[3][2], adam, 1e-7, 0);
            optimizer_free(&o);
        }
}

// Non-finite gradients: the step reports the norm and changes nothing.
static void test_nonfinite(void) {
    float p[2] = {1, 2}, g[2] = {0.5f, NAN};
    param_ref ref = {"w", p, g, 1, 2, PGROUP_MATRIX};
    optimizer_config c = test_config(OPT_ADAMW);
    c.clip_norm = 1.0f;
    optimizer o;
    CHECK(optimizer_init(&o, &c, &ref, 1) == SX_OK);
    CHECK(isnan(optimizer_step(&o, 1.0)));
    CHECK(p[0] == 1 && p[1] == 2 && o.t == 0 && g[0] == 0.5f);
    CHECK(o.slots[0].m[0] == 0);
    optimizer_free(&o);
}

// State names, then: train 3 steps, save state + params, train 2 more; restore into a fresh optimizer and
// fresh parameters, train the same 2 steps: bit-identical parameters and state.
enum { RT_N = 4 };
static const size_t rt_shapes[RT_N][2] = {{8, 12}, {12, 8}, {1, 8}, {10, 8}};
static const param_group rt_groups[RT_N] = {PGROUP_MATRIX, PGROUP_MATRIX, PGROUP_GAIN, PGROUP_EMBED};
static const char *rt_names[RT_N] = {"l0.wq", "l0.w_down", "l0.attn_norm", "emb"};

static void rt_make(param_ref *refs, float **data, float **grad) {
    for (int k = 0; k < RT_N; k++)
        refs[k] = (param_ref){rt_names[k], data[k], grad[k], rt_shapes[k][0], rt_shapes[k][1], rt_groups[k]};
}

static void rt_grads(float **grad, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (int k = 0; k < RT_N; k++) rng_fill_normal(&r, grad[k], rt_shapes[k][0] * rt_shapes[k][1], 1.0f);
}

static void check_state_roundtrip(optimizer_kind kind) {
    optimizer_config c = test_config(kind);
    c.clip_norm = 5.0f;
    c.cautious_wd = true;
    float *data[RT_N], *grad[RT_N], *data2[RT_N];
    for (int k = 0; k < RT_N; k++) {
        size_t n = rt_shapes[k][0] * rt_shapes[k][1];
        data[k] = randn(n, 1.0f);
        grad[k] = malloc(n * sizeof(float));
        data2[k] = malloc(n * sizeof(float));
    }
    param_ref refs[RT_N], refs2[RT_N];
    rt_make(refs, data, grad);
    rt_make(refs2, data2, grad);
    optimizer a, b;
    CHECK(optimizer_init(&a, &c, refs, RT_N) == SX_OK);
    if (kind == OPT_MUON) {
        CHECK(a.n_arrays == 6);
        CHECK(a.n_arrays == 6 && strcmp(a.arrays[0].name, "muon_b.l0.wq") == 0);
        CHECK(a.n_arrays == 6 && strcmp(a.arrays[2].name, "adam_m.l0.attn_norm") == 0);
        CHECK(a.n_arrays == 6 && strcmp(a.arrays[5].name, "adam_v.emb") == 0);
        CHECK(optimizer_state_find(&a, "muon_b.l0.w_down") == &a.arrays[1]);
        CHECK(optimizer_state_find(&a, "adam_v.l0.wq") == NULL);
    } else if (kind == OPT_MUONH) {   // momentum, then the radius
        CHECK(a.n_arrays == 8 && strcmp(a.arrays[1].name, "hyper_r.l0.wq") == 0 && a.arrays[1].numel == 1);
    } else {                          // m, v, then the radius
        CHECK(a.n_arrays == 10 && strcmp(a.arrays[2].name, "hyper_r.l0.wq") == 0 && a.arrays[2].numel == 1);
    }
    size_t total = 0;
    for (size_t i = 0; i < a.n_arrays; i++) total += a.arrays[i].numel;
    CHECK(total == a.state_floats);

    for (int s = 0; s < 3; s++) {
        rt_grads(grad, 100 + s);
        optimizer_step(&a, 1.0 - 0.1 * s);
    }
    // "Checkpoint": parameters, named state arrays, step counter.
    for (int k = 0; k < RT_N; k++) memcpy(data2[k], data[k], rt_shapes[k][0] * rt_shapes[k][1] * sizeof(float));
    float *saved = malloc(a.state_floats * sizeof(float));
    memcpy(saved, a.state, a.state_floats * sizeof(float));
    long saved_t = a.t;
    for (int s = 3; s < 5; s++) {
        rt_grads(grad, 100 + s);
        optimizer_step(&a, 1.0 - 0.1 * s);
    }
    // Resume.
    CHECK(optimizer_init(&b, &c, refs2, RT_N) == SX_OK);
    for (size_t i = 0; i < b.n_arrays; i++) {
        const optimizer_state_array *src = optimizer_state_find(&a, b.arrays[i].name);
        CHECK(src && src->numel == b.arrays[i].numel);
        if (src) memcpy(b.arrays[i].data, saved + (src->data - a.state), src->numel * sizeof(float));
    }
    b.t = saved_t;
    for (int s = 3; s < 5; s++) {
        rt_grads(grad, 100 + s);
        optimizer_step(&b, 1.0 - 0.1 * s);
    }
    for (int k = 0; k < RT_N; k++)
        CHECK(memcmp(data[k], data2[k], rt_shapes[k][0] * rt_shapes[k][1] * sizeof(float)) == 0);
    CHECK(memcmp(a.state, b.state, a.state_floats * sizeof(float)) == 0);
    CHECK(a.t == 5 && b.t == 5);
    optimizer_free(&a);
    optimizer_free(&b);
    free(saved);
    for (int k = 0; k < RT_N; k++) {
        free(data[k]);
        free(grad[k]);
        free(data2[k]);
    }
}

static void test_state_roundtrip(void) {
    check_state_roundtrip(OPT_MUON);
    check_state_roundtrip(OPT_ADAMH);
    check_state_roundtrip(OPT_MUONH);
}

// ZeRO-1's shards: two optimizers over the first two and the last two tensors, each stepped with the norm of
// all four gradients (clipping active), update the parameters bit for bit as one optimizer over all four, and
// their states, one after the other, are that optimizer's state (optimizer_state_floats gives the cut).
static void check_sharded(optimizer_kind kind) {
    optimizer_config c = test_config(kind);
    c.clip_norm = 1.0f;   // the random gradients' norm is about 16: every step clips
    float *data[RT_N], *grad[RT_N], *data2[RT_N], *grad2[RT_N];
    for (int k = 0; k < RT_N; k++) {
        size_t n = rt_shapes[k][0] * rt_shapes[k][1];
        data[k] = randn(n, 1.0f);
        data2[k] = malloc(n * sizeof(float));
        memcpy(data2[k], data[k], n * sizeof(float));
        grad[k] = malloc(n * sizeof(float));
        grad2[k] = malloc(n * sizeof(float));
    }
    param_ref refs[RT_N], refs2[RT_N];
    rt_make(refs, data, grad);
    rt_make(refs2, data2, grad2);
    optimizer whole, shard[2];
    CHECK(optimizer_init(&whole, &c, refs, RT_N) == SX_OK);
    CHECK(optimizer_init(&shard[0], &c, refs2, 2) == SX_OK && optimizer_init(&shard[1], &c, refs2 + 2, RT_N - 2) == SX_OK);
    CHECK(optimizer_state_floats(&c, refs, 2) == shard[0].state_floats);
    CHECK(optimizer_state_floats(&c, refs, RT_N) == whole.state_floats);
    for (int s = 0; s < 4; s++) {
        rt_grads(grad, 200 + s);
        rt_grads(grad2, 200 + s);
        double norm = optimizer_step(&whole, 1.0 - 0.1 * s), all = grad_global_norm(refs2, RT_N);
        CHECK(all == norm && norm > 2 * c.clip_norm);
        for (int h = 0; h < 2; h++) CHECK(optimizer_step_with_norm(&shard[h], 1.0 - 0.1 * s, all) == norm);
    }
    for (int k = 0; k < RT_N; k++)
        CHECK(memcmp(data[k], data2[k], rt_shapes[k][0] * rt_shapes[k][1] * sizeof(float)) == 0);
    CHECK(shard[0].state_floats + shard[1].state_floats == whole.state_floats);
    CHECK(memcmp(whole.state, shard[0].state, shard[0].state_floats * sizeof(float)) == 0);
    CHECK(memcmp(whole.state + shard[0].state_floats, shard[1].state, shard[1].state_floats * sizeof(float)) == 0);
    CHECK(shard[0].t == 4 && shard[1].t == 4 && whole.t == 4);
    optimizer_free(&whole), optimizer_free(&shard[0]), optimizer_free(&shard[1]);
    for (int k = 0; k < RT_N; k++) free(data[k]), free(grad[k]), free(data2[k]), free(grad2[k]);
}

static void test_sharded(void) {
    check_sharded(OPT_ADAMW);
    check_sharded(OPT_MUON);
    check_sharded(OPT_MUONH);
}

// Bad settings are reported with the setting's name.
static void test_config_errors(void) {
    optimizer_config c;
    optimizer_config_default(&c);
    CHECK(optimizer_config_check(&c) == SX_OK);
    c.beta1 = 1.0f;
    CHECK(optimizer_config_check(&c) == SX_ERR_ARG && strstr(sx_last_error(), "beta1"));
    optimizer_config_default(&c);
    c.eps = 0;
    CHECK(optimizer_config_check(&c) == SX_ERR_ARG && strstr(sx_last_error(), "eps"));
    optimizer_config_default(&c);
    c.lr = NAN;
    optimizer o;
    float p = 0, g = 0;
    param_ref ref = {"w", &p, &g, 1, 1, PGROUP_GAIN};
    CHECK(optimizer_init(&o, &c, &ref, 1) == SX_ERR_ARG && strstr(sx_last_error(), "lr"));
    optimizer_free(&o);
    optimizer_kind k;
    CHECK(optimizer_kind_parse("muon", &k) == SX_OK && k == OPT_MUON);
    CHECK(optimizer_kind_parse("sgd", &k) == SX_ERR_ARG && strstr(sx_last_error(), "sgd"));
    CHECK(optimizer_kind_parse("adamh", &k) == SX_OK && k == OPT_ADAMH && !strcmp(optimizer_kind_name(k), "adamh"));
    CHECK(optimizer_kind_parse("muonh", &k) == SX_OK && k == OPT_MUONH && !strcmp(optimizer_kind_name(k), "muonh"));
    optimizer_config_default(&c);
    c.hyper_lr = 1.0f;   // a whole radius per step can land on 0
    CHECK(optimizer_config_check(&c) == SX_ERR_ARG && strstr(sx_last_error(), "hyper_lr"));
    // A setting the kind does not read, set away from its default, would be ignored: refused, and a ladder's
    // copy of it reset (it scales every LR with width, whatever the kind).
    optimizer_config_default(&c);
    c.muon_lr = 0.05f;
    CHECK(optimizer_config_check_used(&c) == SX_ERR_ARG);
    CHECK(!strcmp(sx_last_error(), "optimizer setting muon_lr = 0.05 is for muon; adamw does not use it"));
    c.kind = OPT_MUON;
    CHECK(optimizer_config_check_used(&c) == SX_OK);
    c.kind = OPT_MUONH, c.muon_lr = 0.02f, c.muon_momentum = 0.9f, c.hyper_lr = 0.05f;
    CHECK(optimizer_config_check_used(&c) == SX_OK);
    c.kind = OPT_MUON;
    CHECK(optimizer_config_check_used(&c) == SX_ERR_ARG && strstr(sx_last_error(), "hyper_lr = 0.05 is for adamh and muonh"));
    optimizer_config_reset_unused(&c);
    CHECK(c.hyper_lr == 0.02f && c.muon_momentum == 0.9f && optimizer_config_check_used(&c) == SX_OK);
    c.kind = OPT_ADAMW, c.muon_weight_decay = 0.1f;
    optimizer_config_reset_unused(&c);
    CHECK(c.muon_momentum == 0.95f && c.muon_weight_decay == 0.0f && c.beta1 == 0.9f);
    CHECK(optimizer_kind_uses(OPT_ADAMW, "beta1") && !optimizer_kind_uses(OPT_ADAMH, "muon_momentum"));
    optimizer_config_default(&c);
    json_t *j = optimizer_config_to_json(&c);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "kind")), "adamw") == 0);
    CHECK(j && fabs(json_real_value(json_object_get(j, "beta2")) - 0.95) < 1e-6);
    json_decref(j);
}

int main(void) {
    testlib_bind_gemm_workspace();   // the kernels and modules here run outside a model
    rng_seed(&rng, 1234);
    TEST_RUN(test_adamw_hand);
    TEST_RUN(test_adamw_muon_reference);
    TEST_RUN(test_ns5_reference);
    TEST_RUN(test_ns5_orthogonal);
    TEST_RUN(test_clipping);
    TEST_RUN(test_norm_deterministic);
    TEST_RUN(test_decay_groups);
    TEST_RUN(test_nonfinite);
    TEST_RUN(test_hyperball_reference);
    TEST_RUN(test_cautious_reference);
    TEST_RUN(test_cautious_hand);
    TEST_RUN(test_hyperball_zero_matrix);
    TEST_RUN(test_torch_fixture);
    TEST_RUN(test_state_roundtrip);
    TEST_RUN(test_sharded);
    TEST_RUN(test_config_errors);
    return testlib_finish("optim");
}
