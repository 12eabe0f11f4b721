// optimizer: see optimizer.h.
#include "core/status.h"
#include "optim/optimizer.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/flags.h"
#include "core/threads.h"
#include "optim/adamw.h"
#include "optim/hyperball.h"
#include "optim/muon.h"

void optimizer_config_default(optimizer_config *cfg) {
    *cfg = (optimizer_config){
        .kind = OPT_ADAMW,
        .lr = 3e-3f,
        .beta1 = 0.9f,
        .beta2 = 0.95f,
        .eps = 1e-8f,
        .weight_decay = 0.1f,
        .decay_embed = false,
        .muon_lr = 0.02f,
        .muon_momentum = 0.95f,
        .muon_weight_decay = 0.0f,
        .hyper_lr = 0.02f,
        .cautious_wd = false,
        .clip_norm = 1.0f,
    };
}

static sx_status check_range(const char *name, float x, float lo, bool lo_open, float hi, bool hi_open) {
    bool ok = isfinite(x) && (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
    if (ok) return SX_OK;
    return sx_fail(SX_ERR_ARG, "optimizer setting %s = %g is out of range %c%g, %g%c", name, x,
                   lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
}

sx_status optimizer_config_check(const optimizer_config *cfg) {
    const struct { const char *name; float x, lo; bool lo_open; float hi; bool hi_open; } r[] = {
        {"lr", cfg->lr, 0, false, INFINITY, true},
        {"beta1", cfg->beta1, 0, false, 1, true},
        {"beta2", cfg->beta2, 0, false, 1, true},
        {"eps", cfg->eps, 0, true, INFINITY, true},
        {"weight_decay", cfg->weight_decay, 0, false, INFINITY, true},
        {"muon_lr", cfg->muon_lr, 0, false, INFINITY, true},
        {"muon_momentum", cfg->muon_momentum, 0, false, 1, true},
        {"muon_weight_decay", cfg->muon_weight_decay, 0, false, INFINITY, true},
        {"hyper_lr", cfg->hyper_lr, 0, false, 1, true},
        {"clip_norm", cfg->clip_norm, 0, false, INFINITY, true},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        sx_status st = check_range(r[i].name, r[i].x, r[i].lo, r[i].lo_open, r[i].hi, r[i].hi_open);
        if (st != SX_OK) return st;
    }
    if (cfg->kind < OPT_ADAMW || cfg->kind > OPT_MUONH)
        return sx_fail(SX_ERR_ARG, "unknown optimizer kind %d", (int)cfg->kind);
    return SX_OK;
}

// The settings only some kinds read, with the kinds (a bit per optimizer_kind) that read them.
#define KINDS(a, b) ((1u << (a)) | (1u << (b)))
static const struct {
    const char *name;
    size_t offset;
    unsigned kinds;
} kind_settings[] = {
    {"muon_lr", offsetof(optimizer_config, muon_lr), 1u << OPT_MUON},
    {"muon_momentum", offsetof(optimizer_config, muon_momentum), KINDS(OPT_MUON, OPT_MUONH)},
    {"muon_weight_decay", offsetof(optimizer_config, muon_weight_decay), 1u << OPT_MUON},
    {"hyper_lr", offsetof(optimizer_config, hyper_lr), KINDS(OPT_ADAMH, OPT_MUONH)},
};
#define N_KIND_SETTINGS (sizeof kind_settings / sizeof *kind_settings)

static float *setting_at(const optimizer_config *cfg, size_t i) {
    return (float *)((char *)cfg + kind_settings[i].offset);
}

bool optimizer_kind_uses(optimizer_kind kind, const char *setting) {
    for (size_t i = 0; i < N_KIND_SETTINGS; i++)
        if (!strcmp(setting, kind_settings[i].name)) return kind_settings[i].kinds >> kind & 1u;
    return true;
}

static const char *const kind_names[] = {[OPT_ADAMW] = "adamw", [OPT_MUON] = "muon", [OPT_ADAMH] = "adamh",
                                         [OPT_MUONH] = "muonh"};

sx_status optimizer_kind_parse(const char *name, optimizer_kind *out) {
    for (int k = OPT_ADAMW; k <= OPT_MUONH; k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (optimizer_kind)k;
            return SX_OK;
        }
    return sx_fail(SX_ERR_ARG, "unknown optimizer '%s' (expected adamw, muon, adamh or muonh)", name);
}

const char *optimizer_kind_name(optimizer_kind kind) { return kind_names[kind]; }

sx_status optimizer_config_check_used(const optimizer_config *cfg) {
    optimizer_config d;
    optimizer_config_default(&d);
    for (size_t i = 0; i < N_KIND_SETTINGS; i++) {
        if (optimizer_kind_uses(cfg->kind, kind_settings[i].name) || *setting_at(cfg, i) == *setting_at(&d, i)) continue;
        char users[64] = "";
        for (int k = OPT_ADAMW, n = 0; k <= OPT_MUONH; k++)
            if (kind_settings[i].kinds >> k & 1u)
                snprintf(users + strlen(users), sizeof users - strlen(users), "%s%s", n++ ? " and " : "", kind_names[k]);
        return sx_fail(SX_ERR_ARG, "optimizer setting %s = %g is for %s; %s does not use it", kind_settings[i].name,
                       (double)*setting_at(cfg, i), users, kind_names[cfg->kind]);
    }
    return SX_OK;
}

void optimizer_config_reset_unused(optimizer_config *cfg) {
    optimizer_config d;
    optimizer_config_default(&d);
    for (size_t i = 0; i < N_KIND_SETTINGS; i++)
        if (!optimizer_kind_uses(cfg->kind, kind_settings[i].name)) *setting_at(cfg, i) = *setting_at(&d, i);
}

json_t *optimizer_config_to_json(const optimizer_config *cfg) {
    return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:f, s:f, s:f, s:f, s:b, s:f}",
                     "kind", optimizer_kind_name(cfg->kind), "lr", float_as_typed(cfg->lr), "beta1",
                     float_as_typed(cfg->beta1), "beta2", float_as_typed(cfg->beta2), "eps", float_as_typed(cfg->eps),
                     "weight_decay", float_as_typed(cfg->weight_decay), "decay_embed", (int)cfg->decay_embed,
                     "muon_lr", float_as_typed(cfg->muon_lr), "muon_momentum", float_as_typed(cfg->muon_momentum),
                     "muon_weight_decay", float_as_typed(cfg->muon_weight_decay), "hyper_lr",
                     float_as_typed(cfg->hyper_lr), "cautious_wd", (int)cfg->cautious_wd, "clip_norm",
                     float_as_typed(cfg->clip_norm));
}

double optim_sumsq(const float *x, size_t n) {
    enum { PARTS = 64, LANES = 8 };
    double part[PARTS];
    const size_t chunk = (n + PARTS - 1) / PARTS;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int k = 0; k < PARTS; k++) {
        size_t lo = (size_t)k * chunk, hi = lo + chunk < n ? lo + chunk : n;
        double s[LANES] = {0};
        size_t i = lo;
        for (; i + LANES <= hi; i += LANES)
            for (int l = 0; l < LANES; l++) s[l] += (double)x[i + l] * (double)x[i + l];
        for (; i < hi; i++) s[0] += (double)x[i] * (double)x[i];
        double t = 0;
        for (int l = 0; l < LANES; l++) t += s[l];
        part[k] = t;
    }
    double total = 0;
    for (int k = 0; k < PARTS; k++) total += part[k];
    return total;
}

double grad_global_norm(const param_ref *params, size_t n) {
    double total = 0;
    for (size_t i = 0; i < n; i++) total += optim_sumsq(params[i].grad, params[i].rows * params[i].cols);
    return sqrt(total);
}

double grad_clip_global_norm(const param_ref *params, size_t n, double max_norm) {
    double norm = grad_global_norm(params, n);
    grad_clip_to(params, n, norm, max_norm);
    return norm;
}

void grad_clip_to(const param_ref *params, size_t n, double norm, double max_norm) {
    if (!(max_norm > 0) || !(norm > max_norm)) return;
    const float scale = (float)(max_norm / (norm + 1e-6));
    for (size_t k = 0; k < n; k++) {
        float *g = params[k].grad;
        size_t numel = params[k].rows * params[k].cols;
#pragma omp parallel for schedule(static) if (numel >= 32768)
        for (size_t i = 0; i < numel; i++) g[i] *= scale;
    }
}

static bool uses_muon(const optimizer_config *cfg, const param_ref *p) {
    return (cfg->kind == OPT_MUON || cfg->kind == OPT_MUONH) && p->group == PGROUP_MATRIX;
}

// Marin's routing (ARCH-FEATURES F33): hidden matrices on the hyperball; embeddings, head, gains stay AdamW.
static bool uses_hyperball(const optimizer_config *cfg, const param_ref *p) {
    return (cfg->kind == OPT_ADAMH || cfg->kind == OPT_MUONH) && p->group == PGROUP_MATRIX;
}

static bool decays(const optimizer_config *cfg, const param_ref *p) {
    if (uses_hyperball(cfg, p)) return false;   // the sphere replaces the decay
    switch (p->group) {
    case PGROUP_MATRIX:
    case PGROUP_HEAD: return true;
    case PGROUP_EMBED: return cfg->decay_embed;
    case PGROUP_GAIN: return false;
    }
    return false;
}

// State floats of one tensor (its numel already checked against overflow).
static size_t tensor_state_floats(const optimizer_config *cfg, const param_ref *p) {
    return (uses_muon(cfg, p) ? 1 : 2) * p->rows * p->cols + (uses_hyperball(cfg, p) ? 1 : 0);
}

size_t optimizer_state_floats(const optimizer_config *cfg, const param_ref *params, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += tensor_state_floats(cfg, &params[i]);
    return total;
}

void optimizer_free(optimizer *o) {
    if (o->arrays)
        for (size_t i = 0; i < o->n_arrays; i++) sx_free(o->arrays[i].name);
    sx_free(o->arrays);
    sx_free(o->params);
    sx_free(o->slots);
    sx_free(o->state);
    sx_free(o->scratch);
    sx_free(o->gemm_work.buf);
    memset(o, 0, sizeof *o);
}

static sx_status add_array(optimizer *o, const char *prefix, const param_ref *p, float *data, size_t numel) {
    size_t len = strlen(prefix) + strlen(p->name) + 2;
    char *name = sx_alloc(len, "optimizer state name");
    if (!name) return SX_ERR_NOMEM;   // sx_alloc said what
    snprintf(name, len, "%s.%s", prefix, p->name);
    o->arrays[o->n_arrays++] = (optimizer_state_array){name, data, numel};
    return SX_OK;
}

sx_status optimizer_init(optimizer *o, const optimizer_config *cfg, const param_ref *params, size_t n) {
    memset(o, 0, sizeof *o);
    sx_status st = optimizer_config_check(cfg);
    if (st != SX_OK) return st;
    o->cfg = *cfg;
    size_t state = 0, scratch = 0, numel, gemm_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const param_ref *p = &params[i];
        SX_CHECK(p->name && p->data && p->grad, "optimizer_init: every param_ref needs name, data and grad");
        if (!sx_mul_size(p->rows, p->cols, &numel)) return SX_ERR_ARG;   // sx_mul_size said what
        for (size_t j = 0; j < i; j++)
            SX_CHECK(strcmp(params[j].name, p->name) != 0, "optimizer_init: parameter names must be unique");
        // Muon's direction needs its workspace; Adam's, under the hyperball, one tensor-sized buffer.
        size_t s = uses_muon(cfg, p) ? muon_scratch_floats(p->rows, p->cols) : uses_hyperball(cfg, p) ? numel : 0;
        if (s > scratch) scratch = s;
        // Muon's products have M, N and K among rows and cols.
        const size_t d = p->rows > p->cols ? p->rows : p->cols;
        const size_t g = uses_muon(cfg, p) ? gemm_workspace_bytes(d, d, d, (size_t)threads_most()) : 0;
        if (g == SIZE_MAX) return sx_fail(SX_ERR_ARG, "optimizer: matrix %s is too large for Muon", p->name);
        if (g > gemm_bytes) gemm_bytes = g;
        state += tensor_state_floats(cfg, p);
    }
    o->params = sx_alloc(n * sizeof *o->params, "optimizer parameter list");
    o->slots = sx_calloc(n * sizeof *o->slots, "optimizer slots");
    o->arrays = sx_calloc(3 * n * sizeof *o->arrays, "optimizer state index");
    o->state = sx_calloc(state * sizeof(float), "optimizer state (Adam moments, Muon momentum, hyperball radii)");
    o->scratch = scratch ? sx_alloc(scratch * sizeof(float), "Muon and hyperball workspace") : NULL;
    o->gemm_work = (gemm_workspace){gemm_bytes ? sx_alloc_huge(gemm_bytes, "Muon's GEMM packing workspace") : NULL,
                                    gemm_bytes};
    if (!o->params || !o->slots || !o->arrays || !o->state || (scratch && !o->scratch) ||
        (gemm_bytes && !o->gemm_work.buf)) {
        optimizer_free(o);
        return SX_ERR_NOMEM;   // sx_alloc said what
    }
    o->n_params = n;
    o->state_floats = state;
    float *next = o->state;
    for (size_t i = 0; i < n; i++) {
        const param_ref *p = &params[i];
        optimizer_slot *s = &o->slots[i];
        numel = p->rows * p->cols;
        o->params[i] = *p;
        s->muon = uses_muon(cfg, p);
        s->decay = decays(cfg, p);
        s->m = next;
        next += numel;
        st = add_array(o, s->muon ? "muon_b" : "adam_m", p, s->m, numel);
        if (st == SX_OK && !s->muon) {
            s->v = next;
            next += numel;
            st = add_array(o, "adam_v", p, s->v, numel);
        }
        if (st == SX_OK && uses_hyperball(cfg, p)) {
            s->radius = next++;
            *s->radius = (float)sqrt(optim_sumsq(p->data, numel));
            st = add_array(o, "hyper_r", p, s->radius, 1);
            if (st == SX_OK && !(*s->radius > 0 && isfinite(*s->radius)))
                st = sx_fail(SX_ERR_ARG, "optimizer %s: matrix %s has norm %g, and a hyperball keeps each matrix at its "
                             "initial norm (start it non-zero)", optimizer_kind_name(cfg->kind), p->name,
                             (double)*s->radius);
        }
        if (st != SX_OK) {
            optimizer_free(o);
            return st;
        }
    }
    return SX_OK;
}

double optimizer_step(optimizer *o, double lr_mult) {
    return optimizer_step_with_norm(o, lr_mult, grad_global_norm(o->params, o->n_params));
}

double optimizer_step_with_norm(optimizer *o, double lr_mult, double norm) {
    const optimizer_config *c = &o->cfg;
    if (!isfinite(norm)) return norm;
    grad_clip_to(o->params, o->n_params, norm, c->clip_norm);
    o->t++;
    const double lr = c->lr * lr_mult, muon_lr = c->muon_lr * lr_mult;
    const gemm_workspace *outer = gemm_bind_workspace(&o->gemm_work);
    for (size_t i = 0; i < o->n_params; i++) {
        const param_ref *p = &o->params[i];
        const optimizer_slot *s = &o->slots[i];
        const size_t numel = p->rows * p->cols;
        adamw_step_args a = {lr, c->beta1, c->beta2, c->eps, s->decay ? c->weight_decay : 0.0, o->t, c->cautious_wd};
        if (s->radius) {
            const float *u = o->scratch;
            if (s->muon) u = muon_direction(p->grad, s->m, p->rows, p->cols, c->muon_momentum, o->scratch);
            else adam_direction(p->grad, s->m, s->v, numel, &a, o->scratch);
            hyperball_step(p->data, u, numel, *s->radius, c->hyper_lr * lr_mult);
        } else if (s->muon) {
            muon_step_args m = {muon_lr, c->muon_momentum, c->muon_weight_decay, c->cautious_wd};
            muon_update(p->data, p->grad, s->m, p->rows, p->cols, &m, o->scratch);
        } else {
            adamw_update(p->data, p->grad, s->m, s->v, numel, &a);
        }
    }
    gemm_bind_workspace(outer);
    return norm;
}

optimizer_state_array *optimizer_state_find(optimizer *o, const char *name) {
    for (size_t i = 0; i < o->n_arrays; i++)
        if (strcmp(o->arrays[i].name, name) == 0) return &o->arrays[i];
    return NULL;
}
