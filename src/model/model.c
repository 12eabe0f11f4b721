#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "core/status.h"
#include "core/threads.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/xent.h"
#include "model/bigram.h"
#include "model/dcmha.h"
#include "model/gatednorm.h"
#include "model/model.h"
#include "model/quant.h"
#include "model/smear.h"
#include "model/value_embed.h"

// Rows of logits materialised at once by the fused head + cross-entropy: as many as fit in HEAD_BYTES,
// within [HEAD_ROWS_MIN, HEAD_ROWS_MAX]. Longer chunks make the head's weight-gradient product deeper (fewer
// passes over the V x C gradient): 1024 rows trained d2 (vocab 8192) 2.5% and the demo's rungs (vocab 2048)
// 4% faster than 256.
enum { HEAD_ROWS_MIN = 256, HEAD_ROWS_MAX = 1024 };
#define HEAD_BYTES ((size_t)32 << 20)

// Activation layout for shape (B, T), BT = B·T, C = width, L layers:
//   x      (2L+1, BT, C)  residual stream: x[0] embeddings, x[2l+1] after layer l's mixer, x[2l+2] after its FFN
//   hn     (2L+1, BT, C)  normed inputs of each sub-layer; hn[2L] the final norm's output
//   rstd   (2L+1, BT)
//   mixer_saved (L, ...), ffn_saved (L, ...)
//   dx, dh (BT, C)        gradient of the residual stream and of a norm's output
//   smear_in (BT, C)      with smear: the input embeddings before it (empty otherwise)
//   scratch               max of the modules' scratch and the head's: logits (head_rows, V), then the
//                         cross-entropy's workspace
//   rope cos/sin (T, rope_dim/2)
//   gate   (2L+1, gatednorm_saved_floats(BT)) with gnorm<R>: each norm's GatedNorm saved block (else empty)
//   work                  not in the block: m->work, the other kernels' workspace (work_floats)
typedef struct {
    float *x, *hn, *rstd, *mixer_saved, *ffn_saved, *dx, *dh, *smear_in, *scratch, *cos, *sin, *gate, *work;
    size_t mixer_per_layer, ffn_per_layer, work_floats;
} act_views;

static sx_status build_table(model *m) {
    const model_config *c = &m->cfg;
    param_table *t = &m->table;
    // Tied, the embedding is also the head: 1/sqrt(C) keeps the initial logits O(1). Untied, the head starts
    // at zero (uniform predictions) and the embedding can take unit scale, which the first norm undoes anyway.
    float emb_std = c->untied ? 1.0f : 1.0f / sqrtf((float)c->width);
    sx_status s = param_table_add(t, "emb", c->vocab, c->width, INIT_NORMAL, emb_std, PGROUP_EMBED);
    m->bigram = t->n;
    if (!s) s = bigram_declare(c, t);
    m->ve = t->n;
    if (!s) s = value_embed_declare(c, t);
    m->smear = t->n;
    if (!s) s = smear_declare(c, t);
    m->dc = t->n;
    if (!s) s = dcmha_declare(c, t);
    m->layer_first = sx_calloc_n(c->n_layer, sizeof *m->layer_first, "model m.layer_first");
    if (!m->layer_first) return sx_fail(SX_ERR_NOMEM, "out of memory");
    char name[48];
    for (size_t l = 0; l < c->n_layer && !s; l++) {
        m->layer_first[l] = t->n;
        snprintf(name, sizeof name, "l%zu.attn_norm", l);
        s = param_table_add(t, name, 1, c->width, INIT_ONES, 0, PGROUP_GAIN);
        size_t before = t->n;
        if (!s) s = m->mixer->declare(c, l, t);
        m->mixer_tensors = t->n - before;
        snprintf(name, sizeof name, "l%zu.mlp_norm", l);
        if (!s) s = param_table_add(t, name, 1, c->width, INIT_ONES, 0, PGROUP_GAIN);
        before = t->n;
        if (!s) s = m->ffn->declare(c, l, t);
        m->ffn_tensors = t->n - before;
    }
    m->norm_f = t->n;
    if (!s) s = param_table_add(t, "norm_f", 1, c->width, INIT_ONES, 0, PGROUP_GAIN);
    m->head = m->emb = 0;
    if (!s && c->untied) {
        m->head = t->n;
        s = param_table_add(t, "head", c->vocab, c->width, INIT_ZERO, 0, PGROUP_HEAD);
    }
    m->gnorm = t->n;
    if (!s) s = gatednorm_declare(c, t);
    return s;
}

// The attention mixer of each config kind: a new variant is its module file and one row here.
static const block_module *const mixers[] = {[MIXER_GQA] = &attn_gqa_module, [MIXER_MLA] = &attn_mla_module};

const block_module *model_mixer_of(const model_config *c) { return mixers[c->mixer]; }

sx_status model_declare(model *m, const model_config *cfg) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->mixer = model_mixer_of(cfg);
    m->ffn = cfg->n_expert ? &ffn_moe_module : &ffn_dense_module;
    sx_status s = build_table(m);
    if (s) model_free(m);
    return s;
}

sx_status model_init(model *m, const model_config *cfg) {
    sx_status s = model_declare(m, cfg);
    if (s) return s;
    m->n_stats = m->ffn->n_stats ? m->ffn->n_stats(cfg) : 0;
    if (m->n_stats) {
        m->stats_acc = sx_calloc_n(2 * cfg->n_layer * m->n_stats, sizeof *m->stats_acc, "model m.stats_acc");
        if (!m->stats_acc) { model_free(m); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
        m->stats_last = m->stats_acc + cfg->n_layer * m->n_stats;
    }
    size_t n = m->table.total, bytes;
    if (!sx_mul_size(n, 2 * sizeof(float), &bytes)) { model_free(m); return SX_ERR_ARG; }   // sx_mul_size said what
    // Parameters and gradients are two flat blocks in the table's order, so zeroing gradients, clipping and
    // checkpointing are single loops over contiguous memory.
    m->params = sx_calloc(bytes, "model parameters and gradients");
    m->p = sx_calloc_n(m->table.n, sizeof *m->p, "model m.p");
    m->g = sx_calloc_n(m->table.n, sizeof *m->g, "model m.g");
    if (!m->params || !m->p || !m->g) { model_free(m); return sx_fail(SX_ERR_NOMEM, "out of memory for the model (%zu parameters)", n); }
    m->grads = m->params + n;
    for (size_t i = 0; i < m->table.n; i++) {
        m->p[i] = m->params + m->table.v[i].offset;
        m->g[i] = m->grads + m->table.v[i].offset;
    }
    return SX_OK;
}

// Frees what model_reserve allocated for a shape (activations, tokens, the kernels' workspaces).
static void release_shape(model *m) {
    sx_free(m->acts);
    sx_free(m->tokens);
    sx_free(m->work);
    sx_free(m->gemm_work.buf);
    sx_free(m->head_panels);
    m->acts = NULL;
    m->tokens = NULL;
    m->work = NULL;
    m->gemm_work = (gemm_workspace){0};
    m->head_panels = NULL;
}

void model_free(model *m) {
    model_int8_release(m);
    sx_free(m->params);
    release_shape(m);
    free(m->p);
    free(m->g);
    free(m->layer_first);
    free(m->stats_acc);
    param_table_free(&m->table);
    memset(m, 0, sizeof *m);
}

void model_init_weights(model *m, uint64_t seed) { param_table_init_values(&m->table, m->params, seed); }
void model_init_weights_by_name(model *m, uint64_t seed) { param_table_init_by_name(&m->table, m->params, seed); }
void model_init_zero_matrices(model *m, uint64_t seed) { param_table_init_zero_matrices(&m->table, m->params, seed); }

void model_layer_addons(const model *m, size_t l, const int32_t *tok, bool with_grads, layer_addons *buf,
                        block_shape *bs, decode_shape *ds) {
    float *const *g = with_grads ? m->g : NULL;
    const value_embed_layer *ve = value_embed_at(&m->cfg, l, m->p, g, m->ve, tok, &buf->ve) ? &buf->ve : NULL;
    const dcmha_layer *dc = dcmha_at(&m->cfg, l, m->p, g, m->dc, &buf->dc) ? &buf->dc : NULL;
    if (bs) { bs->ve = ve; bs->dc = dc; }
    if (ds) { ds->ve = ve; ds->dc = dc; }
}

void model_gate_norm(const model *m, size_t k, size_t n, float *h, float *saved, float *scratch) {
    if (!m->cfg.gnorm_rank) return;
    gatednorm_forward(n, m->cfg.width, m->cfg.gnorm_rank, m->p[m->gnorm + 2 * k], m->p[m->gnorm + 2 * k + 1], h,
                      saved, scratch);
}

// Backward of site k's GatedNorm: dh (BT, C) from ∂L/∂(gated output) to ∂L/∂(norm output), in place.
static void gate_norm_backward(model *m, size_t k, const float *x, size_t gain, const float *rstd, float *dh,
                               const float *saved, float *scratch) {
    if (!m->cfg.gnorm_rank) return;
    size_t w = m->gnorm + 2 * k;
    gatednorm_backward(m->B * m->T, m->cfg.width, m->cfg.gnorm_rank, x, m->p[gain], rstd, m->p[w], m->p[w + 1],
                       m->g[w], m->g[w + 1], dh, saved, scratch);
}

static size_t head_rows(const model_config *c, size_t BT) {
    size_t rows = HEAD_BYTES / (c->vocab * sizeof(float));
    rows = rows < HEAD_ROWS_MIN ? HEAD_ROWS_MIN : rows > HEAD_ROWS_MAX ? HEAD_ROWS_MAX : rows;
    return rows < BT ? rows : BT;
}

// Token ids kept per batch: inputs and targets, with the bigram table each input's previous token, row and
// sign pattern, then the extra targets.
static size_t extra_first(const model *m, size_t BT) { return (m->cfg.bigram_rows ? 5 : 2) * BT; }
static size_t token_ints(const model *m, size_t BT) { return extra_first(m, BT) + m->n_extra * BT; }

// The head's logits block, rounded up so that the cross-entropy's workspace after it is 64-byte aligned.
static size_t head_logits_floats(const model *m, size_t BT) {
    return (head_rows(&m->cfg, BT) * m->cfg.vocab + 15) & ~(size_t)15;
}

static size_t head_work_floats(const model *m, size_t BT, size_t threads) {
    return xent_workspace_floats(head_rows(&m->cfg, BT), m->cfg.vocab, (int)threads);
}

static size_t scratch_floats(const model *m, size_t BT, size_t threads) {
    size_t a = m->mixer->scratch_floats(&m->cfg, BT), b = m->ffn->scratch_floats(&m->cfg, BT);
    size_t head = head_logits_floats(m, BT) + head_work_floats(m, BT, threads);
    size_t s = a > b ? a : b, gate = m->cfg.gnorm_rank ? gatednorm_scratch_floats(&m->cfg, BT) : 0;
    s = s > gate ? s : gate;
    return s > head ? s : head;
}

// The kernels' workspace: the norms' partial gain gradients and what the modules' kernels ask for.
static size_t work_floats(const model *m, size_t B, size_t T, size_t threads) {
    size_t n = rmsnorm_backward_workspace_floats(B * T, m->cfg.width);
    const block_module *mods[] = {m->mixer, m->ffn};
    for (size_t i = 0; i < 2; i++) {
        size_t k = mods[i]->work_floats ? mods[i]->work_floats(&m->cfg, B, T, threads) : 0;
        n = k > n ? k : n;
    }
    return n;
}

// Carves the activation block into views (sizes as in the layout comment); returns the float count.
static size_t carve(const model *m, size_t B, size_t T, size_t threads, float *base, act_views *v) {
    const model_config *c = &m->cfg;
    size_t BT = B * T, C = c->width, L = c->n_layer;
    v->mixer_per_layer = (m->mixer->saved_floats(c, BT) + 15) & ~(size_t)15;
    v->ffn_per_layer = (m->ffn->saved_floats(c, BT) + 15) & ~(size_t)15;
    const size_t sizes[] = {(2 * L + 1) * BT * C, (2 * L + 1) * BT * C, (2 * L + 1) * BT, L * v->mixer_per_layer,
                            L * v->ffn_per_layer, BT * C, BT * C, c->smear ? BT * C : 0, scratch_floats(m, BT, threads),
                            T * c->rope_dim / 2, T * c->rope_dim / 2,
                            c->gnorm_rank ? (2 * L + 1) * gatednorm_saved_floats(c, BT) : 0};
    float **dst[] = {&v->x, &v->hn, &v->rstd, &v->mixer_saved, &v->ffn_saved, &v->dx, &v->dh, &v->smear_in,
                     &v->scratch, &v->cos, &v->sin, &v->gate};
    return block_carve(base, sizes, dst, sizeof sizes / sizeof *sizes, 16);
}

size_t model_gemm_work_bytes(const model *m, size_t rows, size_t threads) {
    // Every product's M, N and K is the rows, a dimension of a weight, or a part of one (a head's share).
    size_t d = rows;
    for (size_t i = 0; i < m->table.n; i++) {
        d = m->table.v[i].rows > d ? m->table.v[i].rows : d;
        d = m->table.v[i].cols > d ? m->table.v[i].cols : d;
    }
    return gemm_workspace_bytes(d, d, d, threads);
}

// The head's packed weight: as op(B) of logits = h·Wᵀ (K = C, N = V), then of dh = dlogits·W (K = V, N = C),
// each at a 64-byte boundary.
static size_t head_panel_bytes(const model_config *c, size_t which) {
    size_t b = which == 0 ? gemm_packed_b_bytes(c->width, c->vocab) : gemm_packed_b_bytes(c->vocab, c->width);
    return b > SIZE_MAX - 63 ? SIZE_MAX : (b + 63) & ~(size_t)63;
}

// What model_reserve allocates for (B, T) on `threads` threads: the activation block (floats), the token ids,
// the kernels' workspace (floats), GEMM's packing workspace and the head's two packed weights (bytes).
typedef struct {
    size_t acts_floats, token_ints, work_floats, gemm_bytes, panel_bytes[2];
} shape_sizes;

// Fills s; fails (with the reason) when B·T or T is beyond what these sizes are computed for, or a size does not
// fit in memory's address range: the per-layer products below then stay far from size_t's limit.
static sx_status shape_sizes_of(const model *m, size_t B, size_t T, size_t threads, shape_sizes *s) {
    if (B == 0 || T == 0) return sx_fail(SX_ERR_ARG, "batch and sequence length must be positive");
    if (T > MODEL_MAX_SEQ || B > MODEL_MAX_TOKENS / T)
        return sx_fail(SX_ERR_ARG, "a batch of %zu sequences of %zu tokens is more than a model holds (at most %d "
                       "tokens per sequence and %d per micro-batch)", B, T, MODEL_MAX_SEQ, MODEL_MAX_TOKENS);
    act_views v;
    s->acts_floats = carve(m, B, T, threads, NULL, &v);
    s->token_ints = token_ints(m, B * T);
    s->work_floats = work_floats(m, B, T, threads);
    s->gemm_bytes = model_gemm_work_bytes(m, B * T, threads);
    s->panel_bytes[0] = head_panel_bytes(&m->cfg, 0);
    s->panel_bytes[1] = head_panel_bytes(&m->cfg, 1);
    size_t sum = 0, bytes;
    // Floats and token ids are 4 bytes each.
    const size_t words[] = {s->acts_floats, s->work_floats, s->token_ints}, parts[] = {s->gemm_bytes,
                            s->panel_bytes[0], s->panel_bytes[1]};
    for (size_t i = 0; i < 3; i++) {
        if (!sx_mul_size(words[i], 4, &bytes)) return SX_ERR_ARG;   // sx_mul_size said what
        if (parts[i] == SIZE_MAX || sum > SIZE_MAX - bytes - parts[i])
            return sx_fail(SX_ERR_ARG, "the model's activations and workspaces at batch %zu x %zu do not fit in "
                           "memory's address range: use a smaller batch or model", B, T);
        sum += bytes + parts[i];
    }
    return SX_OK;
}

sx_status model_reserve(model *m, size_t B, size_t T) {
    if (m->acts && m->B == B && m->T == T) return SX_OK;
    release_shape(m);
    m->work_threads = (size_t)threads_most();
    shape_sizes z;
    sx_status st = shape_sizes_of(m, B, T, m->work_threads, &z);
    if (st) return st;
    m->acts = sx_calloc(z.acts_floats * sizeof(float), "activations");
    m->tokens = sx_alloc(z.token_ints * sizeof *m->tokens, "input and target tokens");
    m->work_floats = z.work_floats;
    m->work = m->acts && m->tokens ? sx_alloc(m->work_floats * sizeof *m->work, "the kernels' workspace") : NULL;
    m->gemm_work = (gemm_workspace){m->work ? sx_alloc_huge(z.gemm_bytes, "GEMM packing workspace") : NULL,
                                    z.gemm_bytes};
    m->head_panels = m->gemm_work.buf ? sx_alloc_huge(z.panel_bytes[0] + z.panel_bytes[1],
                                                      "the head's packed weight") : NULL;
    if (!m->head_panels) {   // sx_alloc said what
        release_shape(m);
        return SX_ERR_NOMEM;
    }
    m->head_panel_bytes[0] = z.panel_bytes[0];
    m->head_panel_bytes[1] = z.panel_bytes[1];
    m->acts_floats = z.acts_floats;
    m->B = B;
    m->T = T;
    act_views v;
    carve(m, B, T, m->work_threads, m->acts, &v);
    if (m->cfg.rope_dim) rope_tables(T, m->cfg.rope_dim, m->cfg.rope_base, v.cos, v.sin);
    return SX_OK;
}

static act_views views(const model *m) {
    act_views v;
    carve(m, m->B, m->T, m->work_threads, m->acts, &v);
    v.work = m->work;
    v.work_floats = m->work_floats;
    return v;
}

static block_shape shape_of(const model *m, const act_views *v) {
    return (block_shape){.cfg = &m->cfg, .B = m->B, .T = m->T, .rope_cos = v->cos, .rope_sin = v->sin,
                         .grad_scale = 1.0f, .work = v->work, .work_floats = v->work_floats};
}

// inputs tokens[b, 0..T), targets tokens[b, 1..T]; both read from the (B, T+1) batch.
static void split_tokens(const model *m, const int32_t *tokens, int32_t *inputs, int32_t *targets) {
    size_t T = m->T;
    for (size_t b = 0; b < m->B; b++) {
        memcpy(inputs + b * T, tokens + b * (T + 1), T * sizeof *inputs);
        memcpy(targets + b * T, tokens + b * (T + 1) + 1, T * sizeof *targets);
    }
}

// Copies n floats (src NULL: zeroes them), split over the threads: megabytes at a time between parallel
// kernels, where one thread alone would leave the others waiting.
enum { FILL_CHUNK = 1 << 16 };
static void parallel_fill(float *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static) if (n >= 4 * FILL_CHUNK)
    for (size_t i = 0; i < n; i += FILL_CHUNK) {
        const size_t len = n - i < FILL_CHUNK ? n - i : FILL_CHUNK;
        if (src)
            memcpy(dst + i, src + i, len * sizeof *dst);
        else
            memset(dst + i, 0, len * sizeof *dst);
    }
}

// The bigram rows and sign patterns of the inputs (B,T) into m->tokens after the targets, each sequence's first
// position without a previous token. Returns the rows; the patterns follow them.
static const int32_t *bigram_batch(model *m, const int32_t *inputs) {
    size_t B = m->B, T = m->T, BT = B * T;
    int32_t *prev = m->tokens + 2 * BT, *row = prev + BT;
    for (size_t i = 0; i < BT; i++) prev[i] = i % T ? inputs[i - 1] : -1;
    bigram_index(&m->cfg, BT, inputs, prev, row, row + BT);
    return row;
}

// Site k's GatedNorm saved block (NULL without gnorm<R>).
static float *gate_saved(const model *m, const act_views *v, size_t k) {
    return m->cfg.gnorm_rank ? v->gate + k * gatednorm_saved_floats(&m->cfg, m->B * m->T) : NULL;
}

static void forward_layers(model *m, const int32_t *inputs, const act_views *v) {
    const model_config *c = &m->cfg;
    size_t BT = m->B * m->T, C = c->width;
    block_shape bs = shape_of(m, v);
    embedding_forward(BT, C, inputs, m->p[m->emb], v->x);
    if (c->bigram_rows) {
        const int32_t *row = bigram_batch(m, inputs);
        bigram_forward(BT, C, c->bigram_signs, row, row + BT, m->p[m->bigram], v->x);
    }
    if (c->smear) {
        parallel_fill(v->smear_in, v->x, BT * C);
        smear_forward(BT, m->T, C, m->p[m->smear], m->p[m->smear + 1][0], v->smear_in, v->x);
    }
    for (size_t l = 0; l < c->n_layer; l++) {
        bs.layer = l;
        layer_addons addons;
        model_layer_addons(m, l, inputs, false, &addons, &bs, NULL);
        for (size_t half = 0; half < 2; half++) {
            size_t k = 2 * l + half;
            const block_module *mod = half ? m->ffn : m->mixer;
            size_t first = m->layer_first[l] + (half ? 1 + m->mixer_tensors : 0);
            float *saved = half ? v->ffn_saved + l * v->ffn_per_layer : v->mixer_saved + l * v->mixer_per_layer;
            float *x_in = v->x + k * BT * C, *x_out = x_in + BT * C, *h = v->hn + k * BT * C;
            rmsnorm_forward(BT, C, x_in, m->p[first], MODEL_NORM_EPS, h, v->rstd + k * BT);
            model_gate_norm(m, k, BT, h, gate_saved(m, v, k), v->scratch);
            parallel_fill(x_out, x_in, BT * C);   // the residual: modules accumulate into x_out
            mod->forward(&bs, m->p + first + 1, h, x_out, saved, v->scratch);
        }
    }
    size_t k = 2 * c->n_layer;
    rmsnorm_forward(BT, C, v->x + k * BT * C, m->p[m->norm_f], MODEL_NORM_EPS, v->hn + k * BT * C, v->rstd + k * BT);
    model_gate_norm(m, k, BT, v->hn + k * BT * C, gate_saved(m, v, k), v->scratch);
}

// The fused head: logits for head_rows() rows at a time, cross-entropy and (if backward) its gradient, which
// is immediately turned into dh_final (overwritten) and the head's weight gradient (accumulated). extra
// (NULL: none) holds the extra targets (BT, n) of every row; its loss becomes the mean over the rows.
static double head_loss(model *m, const int32_t *targets, xent_extra *extra, const act_views *v, float grad_scale,
                        bool backward, float *logits_out) {
    const model_config *c = &m->cfg;
    size_t BT = m->B * m->T, C = c->width, V = c->vocab;
    const float *h = v->hn + 2 * c->n_layer * BT * C, *W = m->p[m->head];
    // W (V,C) serves every chunk: packed once as op(B) of logits = h·Wᵀ, and of dh = dlogits·W.
    gemm_packed_b w_logits, w_dh;
    unsigned char *panels = m->head_panels;
    gemm_pack_b(&w_logits, panels, m->head_panel_bytes[0], true, C, V, W, C);
    if (backward) gemm_pack_b(&w_dh, panels + m->head_panel_bytes[0], m->head_panel_bytes[1], false, V, C, W, C);
    double total = 0, extra_total = 0;
    const size_t chunk = head_rows(c, BT);
    float *work = v->scratch + head_logits_floats(m, BT);
    xent_extra block = extra ? *extra : (xent_extra){0};
    for (size_t r0 = 0; r0 < BT; r0 += chunk) {
        size_t rows = BT - r0 < chunk ? BT - r0 : chunk;
        float *logits = v->scratch;
        gemm_packed(false, rows, h + r0 * C, C, &w_logits, logits, V, false);
        if (logits_out) {
            float *z = logits_out + r0 * V;
            for (size_t i = 0; i < rows * V; i++)
                z[i] = c->softcap > 0 ? c->softcap * tanhf(logits[i] / c->softcap) : logits[i];
        }
        if (extra) block.targets = extra->targets + r0 * extra->n;
        total += xent_forward_backward(rows, V, logits, targets + r0, extra ? &block : NULL, c->softcap, grad_scale,
                                       backward ? logits : NULL, work, head_work_floats(m, BT, m->work_threads));
        extra_total += block.loss;
        if (backward) {
            gemm(true, false, V, C, rows, logits, V, h + r0 * C, C, m->g[m->head], C, true); // dW += dlogitsᵀ·h
            gemm_packed(false, rows, logits, V, &w_dh, v->dh + r0 * C, C, false);              // dh = dlogits·W
        }
    }
    if (extra) extra->loss = extra_total / (double)BT;
    return total / (double)BT;
}

// Tells the hook (if any) that backward stage s is done.
static void grads_ready(const model *m, size_t s) {
    if (m->grad_hook) m->grad_hook->ready(m->grad_hook->ctx, s);
}

sx_status model_loss(model *m, const int32_t *tokens, float *logits_out, double *loss) {
    const long failures = sx_alloc_failures();   // kernels inside parallel regions report failures only here
    const gemm_workspace *outer = gemm_bind_workspace(&m->gemm_work);
    act_views v = views(m);
    size_t BT = m->B * m->T;
    int32_t *buf = m->tokens;
    split_tokens(m, tokens, buf, buf + BT);
    forward_layers(m, buf, &v);
    *loss = head_loss(m, buf + BT, NULL, &v, 0, false, logits_out);
    gemm_bind_workspace(outer);
    return sx_alloc_check(failures);
}

double model_loss_and_grad(model *m, const int32_t *tokens, float grad_scale) {
    const model_config *c = &m->cfg;
    const gemm_workspace *outer = gemm_bind_workspace(&m->gemm_work);
    act_views v = views(m);
    size_t BT = m->B * m->T, C = c->width;
    int32_t *buf = m->tokens;
    split_tokens(m, tokens, buf, buf + BT);
    forward_layers(m, buf, &v);
    for (size_t l = 0; l < c->n_layer && m->n_stats; l++)
        m->ffn->stats(c, BT, v.ffn_saved + l * v.ffn_per_layer, m->stats_acc + l * m->n_stats);
    xent_extra *extra = NULL, x = {.n = m->n_extra, .w = m->extra_w};
    for (size_t k = 0; k < m->n_extra && !extra; k++)
        if (m->extra_w[k] != 0) extra = &x;   // all weights zero: the plain loss, at the plain cost
    if (extra) {
        int32_t *targets = m->tokens + extra_first(m, BT);
        xent_offset_targets(m->B, m->T, tokens, m->mtp, m->prefix, targets);
        x.targets = targets;
    }
    double loss = head_loss(m, buf + BT, extra, &v, grad_scale / (float)BT, true, NULL);
    m->extra_loss = extra ? x.loss : 0;
    size_t k = 2 * c->n_layer;
    gate_norm_backward(m, k, v.x + k * BT * C, m->norm_f, v.rstd + k * BT, v.dh, gate_saved(m, &v, k), v.scratch);
    rmsnorm_backward(BT, C, v.x + k * BT * C, m->p[m->norm_f], v.rstd + k * BT, v.dh, v.dx, m->g[m->norm_f], false,
                     v.work);
    grads_ready(m, 0);
    block_shape bs = shape_of(m, &v);
    bs.grad_scale = grad_scale;
    for (size_t l = c->n_layer; l-- > 0;) {
        bs.layer = l;
        layer_addons addons;
        model_layer_addons(m, l, buf, true, &addons, &bs, NULL);
        for (size_t half = 2; half-- > 0;) {
            k = 2 * l + half;
            const block_module *mod = half ? m->ffn : m->mixer;
            size_t first = m->layer_first[l] + (half ? 1 + m->mixer_tensors : 0);
            const float *saved = half ? v.ffn_saved + l * v.ffn_per_layer : v.mixer_saved + l * v.mixer_per_layer;
            mod->backward(&bs, m->p + first + 1, m->g + first + 1, v.hn + k * BT * C, v.dx, v.dh, saved, v.scratch);
            gate_norm_backward(m, k, v.x + k * BT * C, first, v.rstd + k * BT, v.dh, gate_saved(m, &v, k), v.scratch);
            rmsnorm_backward(BT, C, v.x + k * BT * C, m->p[first], v.rstd + k * BT, v.dh, v.dx, m->g[first], true,
                             v.work);
        }
        grads_ready(m, c->n_layer - l);
    }
    if (c->smear) {   // v.dx becomes the gradient of the embeddings before smear (v.dh and the scratch are free)
        parallel_fill(v.dh, v.dx, BT * C);
        smear_backward(BT, m->T, C, m->p[m->smear], m->p[m->smear + 1][0], v.smear_in, v.dh, v.dx, m->g[m->smear],
                       m->g[m->smear + 1], v.scratch);
    }
    embedding_backward(BT, C, buf, v.dx, m->g[m->emb]);
    if (c->bigram_rows) {
        const int32_t *row = buf + 3 * BT;   // bigram_batch's rows and patterns from the forward
        bigram_backward(BT, C, c->bigram_signs, row, row + BT, v.dx, m->g[m->bigram]);
    }
    grads_ready(m, c->n_layer + 1);
    gemm_bind_workspace(outer);
    return loss;
}

sx_status model_set_extra_targets(model *m, size_t mtp, const int32_t *prefix) {
    SX_CHECK(!m->acts, "call model_set_extra_targets before model_reserve (the targets need room)");
    size_t n = mtp + (prefix != NULL);
    if (n > XENT_MAX_EXTRA)
        return sx_fail(SX_ERR_ARG, "%zu extra targets (multi-token offsets + prefix): at most %d", n, XENT_MAX_EXTRA);
    m->mtp = mtp;
    m->prefix = prefix;
    m->n_extra = n;
    memset(m->extra_w, 0, sizeof m->extra_w);
    return SX_OK;
}

void model_set_extra_weights(model *m, const float *w) { memcpy(m->extra_w, w, m->n_extra * sizeof *w); }

double model_extra_loss(const model *m) { return m->extra_loss; }

double model_aux_loss(const model *m) {
    if (!m->ffn->aux_loss || !m->acts) return 0;
    act_views v = views(m);
    double total = 0;
    for (size_t l = 0; l < m->cfg.n_layer; l++)
        total += m->ffn->aux_loss(&m->cfg, m->B * m->T, v.ffn_saved + l * v.ffn_per_layer);
    return total;
}

void model_after_step(model *m) {
    if (!m->n_stats) return;
    size_t L = m->cfg.n_layer, n = m->n_stats;
    for (size_t l = 0; l < L && m->ffn->after_step; l++)
        m->ffn->after_step(&m->cfg, m->p + m->layer_first[l] + 2 + m->mixer_tensors, m->stats_acc + l * n);
    memcpy(m->stats_last, m->stats_acc, L * n * sizeof *m->stats_acc);
    memset(m->stats_acc, 0, L * n * sizeof *m->stats_acc);
}

json_t *model_moe_stats_json(const model *m) {
    if (!m->n_stats || !m->cfg.n_expert) return NULL;
    json_t *load = json_array(), *max_load = json_array();
    for (size_t l = 0; l < m->cfg.n_layer; l++) {
        const float *c = m->stats_last + l * m->n_stats;   // tokens per expert come first
        size_t E = m->cfg.n_expert;
        double total = 0, mx = 0;
        for (size_t e = 0; e < E; e++) total += c[e], mx = fmax(mx, c[e]);
        json_t *row = json_array();
        for (size_t e = 0; e < E; e++) json_array_append_new(row, json_real(total > 0 ? c[e] / total : 0));
        json_array_append_new(load, row);
        json_array_append_new(max_load, json_real(total > 0 ? mx * (double)E / total : 0));
    }
    return json_pack("{s:o, s:o}", "moe_load", load, "moe_max_load", max_load);
}

void model_zero_grad(model *m) { parallel_fill(m->grads, NULL, m->table.total); }

// Appends the tensors [first, first + n) to order at *k.
static void list_tensors(size_t first, size_t n, size_t *order, size_t *k) {
    for (size_t i = 0; i < n; i++) order[(*k)++] = first + i;
}

void model_grad_stages(const model *m, size_t *order, size_t *stage_end) {
    const model_config *c = &m->cfg;
    const size_t L = c->n_layer, gates = c->gnorm_rank ? 2 : 0;   // tensors per GatedNorm site
    size_t k = 0;
    if (c->untied) list_tensors(m->head, 1, order, &k);
    list_tensors(m->norm_f, 1, order, &k);
    list_tensors(m->gnorm + 2 * (2 * L), gates, order, &k);
    stage_end[0] = k;
    for (size_t l = L; l-- > 0;) {
        list_tensors(m->layer_first[l], 2 + m->mixer_tensors + m->ffn_tensors, order, &k);
        list_tensors(m->gnorm + 2 * (2 * l), 2 * gates, order, &k);
        stage_end[L - l] = k;
    }
    list_tensors(0, m->layer_first[0], order, &k);   // written by every layer, or after them
    stage_end[L + 1] = k;
    SX_CHECK(k == m->table.n, "model_grad_stages: list a new tensor in its backward stage");
}


void model_param_refs(const model *m, param_ref *refs) {
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        refs[i] = (param_ref){.name = s->name, .data = m->p[i], .grad = m->g[i], .rows = s->rows, .cols = s->cols,
                              .group = s->group};
    }
}

size_t model_param_count(const model *m) {
    size_t n = 0;
    for (size_t i = 0; i < m->table.n; i++) n += m->table.v[i].rows * m->table.v[i].cols;
    return n;
}

size_t model_param_count_nonembed(const model *m) {
    size_t n = model_param_count(m) - (m->cfg.vocab + m->cfg.bigram_rows) * m->cfg.width - value_embed_table_floats(&m->cfg);
    return m->cfg.untied ? n - m->cfg.vocab * m->cfg.width : n;
}

sx_status model_memory_bytes(const model *m, size_t B, size_t T, size_t *bytes) {
    shape_sizes z;
    sx_status st = shape_sizes_of(m, B, T, (size_t)threads_most(), &z);
    if (st) return st;
    size_t params = 0;
    if (!sx_mul_size(m->table.total, 2 * sizeof(float), &params)) return SX_ERR_ARG;   // sx_mul_size said what
    // shape_sizes_of checked that the shape's blocks add up within size_t.
    size_t shape = (z.acts_floats + z.work_floats) * sizeof(float) + z.token_ints * sizeof(int32_t) + z.gemm_bytes +
                   z.panel_bytes[0] + z.panel_bytes[1];
    if (shape > SIZE_MAX - params) return sx_fail(SX_ERR_ARG, "the model's memory does not fit in size_t");
    *bytes = params + shape;
    return SX_OK;
}
