// law_nds: L(N, t) = E + A·N^-alpha + B·S(t)^-beta - D·LD(t), bound to curve-ladder points. See law_nds.h.
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/law_nds.h"

#define NDS_BLOCK 32
// Far from a point, consecutive blocks of a run count as one term at their drop-weighted mean position: the
// nodes of a binary tree over each run's blocks (level l: aligned runs of 2^l blocks), each taken whole where
// its extent in P (the LR sum) is at most 1/FAR of its distance from the point. Its error is second order, at
// most drop * 0.025 * (extent / distance)^2 whatever C and g (the kernel's curvature peaks at 0.6 /
// distance^2), so at most 1e-4 of the node's drop; a point then sums about FAR terms per level, O(FAR log
// blocks) in all instead of O(blocks), which densely evaluated long runs (10^5 steps, an eval every 10) need.
// FAR 16 rather than 8: half the error of the one-level grouping this replaced, for 1.3x the time of FAR 8.
#define NDS_FAR 16.0
#define NDS_MAX_LEVELS 48

static const double grid_alpha[] = {0.1, 0.2, 0.3, 0.45, 0.6};
static const double grid_beta[] = {0.1, 0.2, 0.3, 0.45, 0.6};
static const double grid_eps[] = {0.01, 0.05, 0.1};
static const double grid_c[] = {1e-3, 1e-2, 1e-1};
static const double grid_g[] = {0.3, 0.6, 1.0};

static const law_param nds_params[LAW_NDS_NPARAM] = {
    [LAW_NDS_E] = {"E", LAW_LINEAR, NULL, 0},
    [LAW_NDS_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_NDS_B] = {"B", LAW_LINEAR, NULL, 0},
    [LAW_NDS_D] = {"D", LAW_LINEAR, NULL, 0},
    [LAW_NDS_ALPHA] = {"alpha", LAW_NONLIN, grid_alpha, sizeof grid_alpha / sizeof(double)},
    [LAW_NDS_BETA] = {"beta", LAW_NONLIN, grid_beta, sizeof grid_beta / sizeof(double)},
    [LAW_NDS_EPS] = {"eps", LAW_NONLIN, grid_eps, sizeof grid_eps / sizeof(double)},
    [LAW_NDS_C] = {"C", LAW_NONLIN, grid_c, sizeof grid_c / sizeof(double)},
    [LAW_NDS_G] = {"g", LAW_NONLIN, grid_g, sizeof grid_g / sizeof(double)},
};

// A block of consecutive LR drops: total drop `drop`, represented by its middle step `mid`.
typedef struct {
    double drop;
    size_t mid;
} nds_drop;

typedef struct {
    size_t n;              // points
    double *ln_n, *ln_s;   // [n] log N, log S(t)
    double *p_t;           // [n] P(t) = sum_{i<=t} m_i
    size_t *d_n;           // [n] the point's drops: its run's first d_n blocks
    size_t *run;           // [n] the point's run
    size_t *lv_base;       // [runs x NDS_MAX_LEVELS] node j of run r's level l: node lv_base[r * NDS_MAX_LEVELS + l] + j
    size_t *lv_count;      // [runs] a run's number of levels (level 0: its blocks)
    // [nodes] the tree's nodes, every run's levels one after another (level 0 of a run: its blocks, in order):
    double *d_pk;          // P(mid - 1) of a block; the drop-weighted mean of its blocks' for a node above
    double *d_drop;        // the LR drop it holds
    size_t *d_end;         // level 0: the block's last step
    double *d_lo, *d_hi;   // P before its first drop and at its last: its extent
    double *ld, *ld_dc, *ld_dg; // [n] cached LD and its derivatives at key
    double key[2];
} nds_ctx;

static void nds_free(void *p) {
    nds_ctx *c = p;
    if (!c) return;
    free(c->ln_n); free(c->ln_s); free(c->p_t); free(c->d_n); free(c->run); free(c->lv_base); free(c->lv_count);
    free(c->d_pk); free(c->d_drop); free(c->d_end); free(c->d_lo); free(c->d_hi);
    free(c->ld); free(c->ld_dc); free(c->ld_dg);
    free(c);
}

// One term of LD: a drop at distance x (in P) from the point, with its derivatives in C and g, added to acc.
static inline void ld_term(double drop, double x, double C, double g, double acc[3]) {
    x = x > 0 ? x : 0;
    double u = 1 + C * x, up = pow(u, -g);   // pow, not exp(-g log u): fits where g -> 0 depend on its last bits
    acc[0] += drop * (1 - up);
    acc[1] += drop * g * x * up / u;
    acc[2] += drop * log(u) * up;
}

// LD and its derivatives in C and g at every point (cached on (C, g)): from the run's first block on, each
// step takes the largest aligned node that ends before the point and is far enough from it, down to single
// blocks next to it. Points are independent (the same sums in the same order on any thread count): most of a
// fit's time on densely evaluated runs.
static void nds_ld(nds_ctx *c, double C, double g) {
    if (c->key[0] == C && c->key[1] == g) return;
#pragma omp parallel for schedule(dynamic, 64)
    for (size_t i = 0; i < c->n; i++) {
        double acc[3] = {0, 0, 0}, p = c->p_t[i];
        const size_t *base = c->lv_base + c->run[i] * NDS_MAX_LEVELS, top = c->lv_count[c->run[i]] - 1, n = c->d_n[i];
        for (size_t pos = 0; pos < n;) {
            size_t l = pos ? (size_t)__builtin_ctzll(pos) : top;   // the largest node starting at pos
            if (l > top) l = top;
            while (l && (size_t)1 << l > n - pos) l--;
            size_t k = base[l] + (pos >> l);
            while (l && NDS_FAR * (c->d_hi[k] - c->d_lo[k]) > p - c->d_hi[k]) {
                l--;
                k = base[l] + (pos >> l);
            }
            ld_term(c->d_drop[k], p - c->d_pk[k], C, g, acc);
            pos += (size_t)1 << l;
        }
        c->ld[i] = acc[0];
        c->ld_dc[i] = acc[1];
        c->ld_dg[i] = acc[2];
    }
    c->key[0] = C;
    c->key[1] = g;
}

static void nds_basis(void *ctx, const double *p, double *phi) {
    nds_ctx *c = ctx;
    nds_ld(c, p[LAW_NDS_C], p[LAW_NDS_G]);
    for (size_t i = 0; i < c->n; i++) {
        phi[4 * i + 0] = 1;
        phi[4 * i + 1] = exp(-p[LAW_NDS_ALPHA] * c->ln_n[i]);
        phi[4 * i + 2] = exp(p[LAW_NDS_EPS] * c->ln_n[i] - p[LAW_NDS_BETA] * c->ln_s[i]);
        phi[4 * i + 3] = -c->ld[i];
    }
}

static void nds_eval(void *ctx, const double *p, double *pred, double *jac) {
    nds_ctx *c = ctx;
    nds_ld(c, p[LAW_NDS_C], p[LAW_NDS_G]);
    for (size_t i = 0; i < c->n; i++) {
        double na = exp(-p[LAW_NDS_ALPHA] * c->ln_n[i]), sb = exp(p[LAW_NDS_EPS] * c->ln_n[i] - p[LAW_NDS_BETA] * c->ln_s[i]);
        pred[i] = p[LAW_NDS_E] + p[LAW_NDS_A] * na + p[LAW_NDS_B] * sb - p[LAW_NDS_D] * c->ld[i];
        if (!jac) continue;
        double *J = jac + i * LAW_NDS_NPARAM;
        J[LAW_NDS_E] = 1;
        J[LAW_NDS_A] = na;
        J[LAW_NDS_B] = sb;
        J[LAW_NDS_D] = -c->ld[i];
        J[LAW_NDS_ALPHA] = -p[LAW_NDS_A] * na * c->ln_n[i];
        J[LAW_NDS_BETA] = -p[LAW_NDS_B] * sb * c->ln_s[i];
        J[LAW_NDS_EPS] = p[LAW_NDS_B] * sb * c->ln_n[i];
        J[LAW_NDS_C] = -p[LAW_NDS_D] * c->ld_dc[i];
        J[LAW_NDS_G] = -p[LAW_NDS_D] * c->ld_dg[i];
    }
}

// Grows *arr (n elements of size sz) to cap elements; false when out of memory (arr unchanged).
static bool grow(void *arr, size_t cap, size_t sz) {
    void *a = sx_realloc(*(void **)arr, cap * sz, "law_nds");
    if (a) *(void **)arr = a;
    return a != NULL;
}

// Appends a node (its fields but d_end, which only blocks use) to the context's arrays; its index in *k.
static sx_status push_node(nds_ctx *c, size_t *cap, size_t *n_nodes, double pk, double drop, double lo, double hi, size_t *k) {
    if (*n_nodes == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        if (!grow(&c->d_pk, *cap, sizeof(double)) || !grow(&c->d_drop, *cap, sizeof(double)) ||
            !grow(&c->d_end, *cap, sizeof(size_t)) || !grow(&c->d_lo, *cap, sizeof(double)) || !grow(&c->d_hi, *cap, sizeof(double)))
            return sx_fail(SX_ERR_NOMEM, "nds law: out of memory");
    }
    *k = (*n_nodes)++;
    c->d_pk[*k] = pk;
    c->d_drop[*k] = drop;
    c->d_lo[*k] = lo;
    c->d_hi[*k] = hi;
    c->d_end[*k] = 0;
    return SX_OK;
}

// The levels above one run's blocks (level 0 at base[0], n_blocks of them): node j of level l joins nodes 2j
// and 2j + 1 of level l - 1. base[] filled, *levels set.
static sx_status run_levels(nds_ctx *c, size_t n_blocks, size_t *cap, size_t *n_nodes, size_t *base, size_t *levels) {
    size_t l = 1;
    for (; l < NDS_MAX_LEVELS && n_blocks >> l; l++) {
        base[l] = *n_nodes;
        for (size_t j = 0; j < n_blocks >> l; j++) {
            size_t a = base[l - 1] + 2 * j, b = a + 1, k;
            double drop = c->d_drop[a] + c->d_drop[b];   // drops are positive
            sx_status st = push_node(c, cap, n_nodes, (c->d_drop[a] * c->d_pk[a] + c->d_drop[b] * c->d_pk[b]) / drop, drop,
                                     c->d_lo[a], c->d_hi[b], &k);
            if (st) return st;
        }
    }
    *levels = l;
    return SX_OK;
}

// Drops of one run, blocked so no block spans a point's step, appended to the context's arrays; each point
// of the run gets the range of drops at steps <= its own (pt0: the run's first point).
static sx_status run_drops(const law_nds_run *r, const double *prefix, nds_ctx *c, size_t *cap, size_t *n_drops,
                           size_t pt0) {
    for (size_t q = 1; q < r->n_points; q++)
        if (r->steps[q] <= r->steps[q - 1]) return sx_fail(SX_ERR_ARG, "nds law: a run's steps must increase");
    size_t last = r->n_points ? r->steps[r->n_points - 1] : 0, run_first = *n_drops;
    size_t j = 0, open_n = 0, open_first = 0;
    double open_drop = 0;
    for (size_t k = 1; k <= last; k++) {
        double d = r->mult[k - 1] - r->mult[k];
        if (d > 0) {
            if (!open_n) { open_first = k; open_drop = 0; }
            open_drop += d;
            open_n++;
        }
        while (j < r->n_points && r->steps[j] < k) j++;
        int is_point = j < r->n_points && r->steps[j] == k;
        int next_drops = k < last && r->mult[k] - r->mult[k + 1] > 0;
        if (open_n && (open_n == NDS_BLOCK || !next_drops || is_point || k == last)) {
            size_t mid = open_first + (open_n - 1) / 2, b;
            sx_status st = push_node(c, cap, n_drops, prefix[mid - 1], open_drop, prefix[open_first - 1], prefix[k - 1], &b);
            if (st) return st;
            c->d_end[b] = k;
            open_n = 0;
        }
    }
    size_t seen = run_first;
    for (size_t q = 0; q < r->n_points; q++) {
        while (seen < *n_drops && c->d_end[seen] <= r->steps[q]) seen++;
        c->d_n[pt0 + q] = seen - run_first;
    }
    return SX_OK;
}

sx_status law_nds_bind(const law_nds_run *runs, size_t n_runs, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "nds", .n_params = LAW_NDS_NPARAM, .n_linear = 4, .params = nds_params, .eval = nds_eval,
                     .basis = nds_basis, .free_ctx = nds_free};
    size_t n = 0;
    for (size_t r = 0; r < n_runs; r++) n += runs[r].n_points;
    nds_ctx *c = sx_calloc_n(1, sizeof *c, "law_nds c");
    out->ctx = c;
    if (!c) return sx_fail(SX_ERR_NOMEM, "nds law: out of memory");
    c->n = n;
    c->key[0] = c->key[1] = NAN;
    size_t m = n ? n : 1;
    c->ln_n = sx_alloc(m * sizeof(double), "law_nds c.ln_n");
    c->ln_s = sx_alloc(m * sizeof(double), "law_nds c.ln_s");
    c->p_t = sx_alloc(m * sizeof(double), "law_nds c.p_t");
    c->d_n = sx_alloc(m * sizeof(size_t), "law_nds c.d_n");
    c->run = sx_alloc(m * sizeof(size_t), "law_nds c.run");
    c->lv_base = sx_alloc((n_runs ? n_runs : 1) * NDS_MAX_LEVELS * sizeof(size_t), "law_nds c.lv_base");
    c->lv_count = sx_alloc((n_runs ? n_runs : 1) * sizeof(size_t), "law_nds c.lv_count");
    c->ld = sx_alloc(m * sizeof(double), "law_nds c.ld");
    c->ld_dc = sx_alloc(m * sizeof(double), "law_nds c.ld_dc");
    c->ld_dg = sx_alloc(m * sizeof(double), "law_nds c.ld_dg");
    if (!c->ln_n || !c->ln_s || !c->p_t || !c->d_n || !c->run || !c->lv_base || !c->lv_count || !c->ld || !c->ld_dc ||
        !c->ld_dg) {
        fit_law_free(out);
        return sx_fail(SX_ERR_NOMEM, "nds law: out of memory");
    }
    size_t pt = 0, cap = 0, n_nodes = 0;
    sx_status st = SX_OK;
    for (size_t r = 0; r < n_runs && !st; r++) {
        const law_nds_run *u = &runs[r];
        if (!(u->n_params > 0) || !(u->tokens_per_step > 0) || u->n_steps == 0) {
            st = sx_fail(SX_ERR_ARG, "nds law: run %zu has a non-positive size, batch or length", r);
            break;
        }
        double *prefix = sx_alloc(u->n_steps * sizeof *prefix, "law_nds prefix");
        if (!prefix) { st = sx_fail(SX_ERR_NOMEM, "nds law: out of memory"); break; }
        for (size_t i = 0; i < u->n_steps; i++) prefix[i] = (i ? prefix[i - 1] : 0) + u->mult[i];
        for (size_t q = 0; q < u->n_points && !st; q++) {
            if (u->steps[q] >= u->n_steps || !(prefix[u->steps[q]] > 0)) st = sx_fail(SX_ERR_ARG, "nds law: run %zu point %zu out of range", r, q);
            else {
                c->ln_n[pt + q] = log(u->n_params);
                c->ln_s[pt + q] = log(u->tokens_per_step * prefix[u->steps[q]]);
                c->p_t[pt + q] = prefix[u->steps[q]];
            }
        }
        size_t *base = c->lv_base + r * NDS_MAX_LEVELS;
        base[0] = n_nodes;
        c->lv_count[r] = 1;
        if (!st) st = run_drops(u, prefix, c, &cap, &n_nodes, pt);
        if (!st) st = run_levels(c, n_nodes - base[0], &cap, &n_nodes, base, &c->lv_count[r]);
        for (size_t q = 0; q < u->n_points; q++) c->run[pt + q] = r;
        pt += u->n_points;
        free(prefix);
    }
    out->n_points = n;
    if (st) fit_law_free(out);
    return st;
}

const char *law_nds_param_name(size_t j) { return j < LAW_NDS_NPARAM ? nds_params[j].name : NULL; }

sx_status law_nds_predict(const double p[LAW_NDS_NPARAM], const law_nds_run *runs, size_t n_runs, double *pred) {
    fit_law law;
    sx_status st = law_nds_bind(runs, n_runs, &law);
    if (st) return st;
    nds_eval(law.ctx, p, pred, NULL);
    fit_law_free(&law);
    return SX_OK;
}
