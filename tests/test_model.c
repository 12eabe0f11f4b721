// Whole-model tests: finite-difference gradient checks for every option of the dense model, and the
// golden fixtures produced by the independent PyTorch reference (tools/ref/) — logits, loss, every
// gradient, and parameters after AdamW and Muon steps.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

static void test_gradcheck_mha_relu2_tied(void) { modelcheck_gradcheck("d2-w32-hd8-v50"); }
static void test_gradcheck_gqa_swiglu_qknorm_untied(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-swiglu-qknorm-untied-v50"); }
static void test_gradcheck_mqa_gelu_partial_rope_softcap(void) { modelcheck_gradcheck("d2-w32-hd8-kv1-gelu-ropefrac0.5-rope500-softcap5-v50"); }
static void test_gradcheck_no_rope(void) { modelcheck_gradcheck("d1-w24-hd8-ropefrac0-ff40-v40"); }

static void test_fixture_mha_relu2_tied(void) { modelcheck_fixture("mha_relu2_tied"); }
static void test_fixture_gqa_swiglu_qknorm_untied(void) { modelcheck_fixture("gqa_swiglu_qknorm_untied"); }
static void test_fixture_gelu_mqa(void) { modelcheck_fixture("gelu_mqa"); }

static void test_bad_descriptors(void) {
    model_config c;
    const char *bad[] = {"x6", "d0", "d1001", "d-3", "dx", "d6-foo", "d6-hd100", "d6-kv5", "d6-kv0", "d6-ropefrac2", "d6-kv", "d2-w30-hd8", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sx_status s = model_config_parse(bad[i], 0, &c);
        if (!CHECK(s == SX_ERR_ARG)) fprintf(stderr, "  accepted '%s'\n", bad[i]);
        CHECK(strlen(sx_last_error()) > 10);
    }
    // An option given twice, or two that set one field, would silently let the later win.
    const char *twice[][2] = {{"d2-w16-hd8-w32", "option 'w<C>' is given twice"},
                              {"d2-swiglu-gelu", "options 'swiglu' and 'gelu' contradict each other"},
                              {"d2-untied-tied", "options 'untied' and 'tied' contradict each other"},
                              {"d2-moe4k1-moe8k2", "option 'moe<E>k<K>' is given twice"},
                              {"d2-w64-hd16-moe4k1-balance=bias-balance=qb", "(drop balance=bias)"}};
    for (size_t i = 0; i < sizeof twice / sizeof *twice; i++) {
        CHECK(model_config_parse(twice[i][0], 0, &c) == SX_ERR_ARG);
        if (!CHECK(strstr(sx_last_error(), twice[i][1]) != NULL)) fprintf(stderr, "  %s: %s\n", twice[i][0], sx_last_error());
    }
    CHECK(model_config_parse("d12", 0, &c) == SX_OK && c.width == 768 && c.n_head == 12 && c.n_kv_head == 12);
    CHECK(model_config_parse("d6-kv2-swiglu", 0, &c) == SX_OK && c.n_kv_head == 2 && c.ffn_hidden == 1024);
}

// model_memory_bytes on a declared model is what model_init and model_reserve then allocate (the blocks the
// reserved model records; the last model's largest scratch is the head's, sized per thread); a model far too large for any machine is declared and measured without allocating;
// a shape beyond the model's size arithmetic is refused by both, with its numbers.
static void test_memory_without_allocating(void) {
    const char *desc[] = {"d2-w32-hd8-v50", "d2-w64-hd16-mla-dc24-smear-gnorm4-v300", "d2-w64-hd16-moe8k2-untied-v100",
                          "d1-w16-hd8-v4096"};
    for (size_t i = 0; i < sizeof desc / sizeof *desc; i++) {
        model_config c;
        model d, m;
        size_t planned = 0;
        if (!CHECK(model_config_parse(desc[i], 0, &c) == SX_OK && model_declare(&d, &c) == SX_OK)) return;
        CHECK(d.params == NULL && model_memory_bytes(&d, 4, 128, &planned) == SX_OK);
        model_free(&d);
        if (!CHECK(model_init(&m, &c) == SX_OK && model_reserve(&m, 4, 128) == SX_OK)) return;
        size_t held = 2 * m.table.total * sizeof(float) + (m.acts_floats + m.work_floats) * sizeof(float) +
                      4 * 128 * 2 * sizeof(int32_t) + m.gemm_work.bytes + m.head_panel_bytes[0] + m.head_panel_bytes[1];
        if (!CHECK(planned == held)) fprintf(stderr, "  %s: planned %zu bytes, reserved %zu\n", desc[i], planned, held);
        model_free(&m);
    }
    model_config c;
    model big;
    size_t bytes = 0;
    if (!CHECK(model_config_parse("d1000-w65536", 0, &c) == SX_OK && model_declare(&big, &c) == SX_OK)) return;
    CHECK(model_param_count(&big) > (size_t)1 << 45 && model_memory_bytes(&big, 1, 8, &bytes) == SX_OK);
    CHECK(bytes > 8 * model_param_count(&big));
    CHECK(model_memory_bytes(&big, (size_t)1 << 32, (size_t)1 << 32, &bytes) == SX_ERR_ARG);
    CHECK(strstr(sx_last_error(), "4294967296 sequences of 4294967296 tokens") != NULL);
    CHECK(model_memory_bytes(&big, 1, (size_t)MODEL_MAX_SEQ + 1, &bytes) == SX_ERR_ARG);
    model_free(&big);
    model small;
    if (!CHECK(model_config_parse("d1-w16-hd8-v20", 0, &c) == SX_OK && model_init(&small, &c) == SX_OK)) return;
    CHECK(model_reserve(&small, (size_t)1 << 33, (size_t)1 << 31) == SX_ERR_ARG && small.acts == NULL);
    model_free(&small);
}

// A batch large enough for the residual stream's copies and the gradient zeroing to be split over the
// threads, and for the fused head to take its logits in two chunks, gives the loss and the gradients of its
// sequences taken one at a time (one head chunk, one thread for the copies); zeroing clears every gradient.
// With extra targets too (two offsets and a prefix map): each chunk of head rows reads its own rows' targets.
static void large_batch_matches_sequences(bool extras) {
    model_config c;
    model m;
    enum { B = 4, T = 512 };
    if (!CHECK(model_config_parse("d1-w128-hd32-v2048", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    int32_t prefix[2048];
    const float w[3] = {0.5f, 0.25f, 0.3f};
    for (int i = 0; i < 2048; i++) prefix[i] = i % 3 ? i / 2 : -1;
    if (extras) {
        CHECK(model_set_extra_targets(&m, 2, prefix) == SX_OK);
        model_set_extra_weights(&m, w);
    }
    modelcheck_randomize(&m, 11);
    const size_t n = m.table.total;
    int32_t *tok = malloc(B * (T + 1) * sizeof *tok);
    float *g_seq = malloc(n * sizeof *g_seq);
    for (size_t i = 0; i < B * (T + 1); i++) tok[i] = (int32_t)((i * 7919 + 13) % 2048);
    double mean = 0, extra_mean = 0, gmax = 0, gerr = 0;
    CHECK(model_reserve(&m, 1, T) == SX_OK);
    model_zero_grad(&m);
    for (size_t b = 0; b < B; b++) {
        mean += model_loss_and_grad(&m, tok + b * (T + 1), 1.0f / B) / B;
        extra_mean += model_extra_loss(&m) / B;
    }
    memcpy(g_seq, m.grads, n * sizeof *g_seq);
    CHECK(model_reserve(&m, B, T) == SX_OK);
    for (size_t i = 0; i < n; i++) m.grads[i] = NAN;
    model_zero_grad(&m);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += m.grads[i] != 0.0f;
    CHECK(nonzero == 0);
    double whole = model_loss_and_grad(&m, tok, 1.0f);
    CHECK(fabs(whole - mean) <= 1e-5 * fabs(mean));
    CHECK(fabs(model_extra_loss(&m) - extra_mean) <= 1e-5 * fabs(extra_mean) && (extras ? extra_mean > 1 : extra_mean == 0));
    for (size_t i = 0; i < n; i++) {
        gmax = fmax(gmax, fabs(g_seq[i]));
        gerr = fmax(gerr, fabs(m.grads[i] - g_seq[i]));
    }
    CHECK(gmax > 0 && gerr <= 1e-4 * gmax);
    free(tok);
    free(g_seq);
    model_free(&m);
}
static void test_large_batch_matches_sequences(void) { large_batch_matches_sequences(false); }
static void test_large_batch_matches_sequences_extra_targets(void) { large_batch_matches_sequences(true); }

// The gradient of next-token + MTP (2 offsets) + prefix-token loss, soft-capped and untied, by finite differences.
static void test_gradcheck_extra_targets(void) {
    int32_t prefix[50];
    const float w[3] = {0.5f, 0.25f, 0.3f};
    for (int i = 0; i < 50; i++) prefix[i] = i % 3 ? (i * 7) % 50 : -1;
    modelcheck_gradcheck_extra("d2-w32-hd8-kv2-softcap5-untied-v50", 2, prefix, w);
    modelcheck_gradcheck_extra("d1-w32-hd8-v50", 1, NULL, w);
}

// Extra targets at weight zero: the loss and every gradient bit for bit those of a model without them; at
// non-zero weights the gradients move but the next-token loss and the validation loss (model_loss) do not.
static void test_extra_targets_zero_weight_is_plain(void) {
    model_config c;
    model a, b;
    enum { B = 2, T = 9 };
    if (!CHECK(model_config_parse("d1-w32-hd8-v40", 0, &c) == SX_OK && model_init(&a, &c) == SX_OK &&
               model_init(&b, &c) == SX_OK)) return;
    int32_t prefix[40], tok[B * (T + 1)];
    for (int i = 0; i < 40; i++) prefix[i] = i % 2 ? i - 1 : -1;
    for (int i = 0; i < B * (T + 1); i++) tok[i] = (i * 13 + 5) % 40;
    const float zero[3] = {0}, w[3] = {0.5f, 0.25f, 0.3f};
    CHECK(model_set_extra_targets(&b, 2, prefix) == SX_OK);
    CHECK(model_reserve(&a, B, T) == SX_OK && model_reserve(&b, B, T) == SX_OK);
    modelcheck_randomize(&a, 3), modelcheck_randomize(&b, 3);
    model_zero_grad(&a), model_zero_grad(&b);
    model_set_extra_weights(&b, zero);
    double la = model_loss_and_grad(&a, tok, 1.0f), lb = model_loss_and_grad(&b, tok, 1.0f);
    CHECK(la == lb && model_extra_loss(&b) == 0);
    CHECK(memcmp(a.grads, b.grads, a.table.total * sizeof *a.grads) == 0);
    model_zero_grad(&b);
    model_set_extra_weights(&b, w);
    CHECK(model_loss_and_grad(&b, tok, 1.0f) == la && model_extra_loss(&b) > 0);
    CHECK(memcmp(a.grads, b.grads, a.table.total * sizeof *a.grads) != 0);
    double va, vb;
    CHECK(model_loss(&a, tok, NULL, &va) == SX_OK && model_loss(&b, tok, NULL, &vb) == SX_OK && va == vb && va == la);
    model_free(&a), model_free(&b);
}

// The backward's stages (model_grad_stages, what the overlapped all-reduce relies on): every tensor listed once,
// and none written after its stage is reported done: each stage's gradients, snapshotted when the hook
// fires, equal the final ones bit for bit, and were written (non-zero) by then.
typedef struct { const model *m; float *snap; size_t calls; } stage_snapshots;
static void snapshot_stage(void *ctx, size_t stage) {
    stage_snapshots *s = ctx;
    CHECK(stage == s->calls);   // every stage, in order
    memcpy(s->snap + stage * s->m->table.total, s->m->grads, s->m->table.total * sizeof *s->snap);
    s->calls++;
}

static void grad_stages_are_final(const char *descriptor) {
    model_config c;
    model m;
    enum { B = 2, T = 9 };
    if (!CHECK(model_config_parse(descriptor, 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, B, T) == SX_OK);
    modelcheck_randomize(&m, 5);
    model_zero_grad(&m);
    const size_t n = m.table.n, S = MODEL_GRAD_STAGES(&m), total = m.table.total;
    size_t *order = calloc(n, sizeof *order), *end = calloc(S, sizeof *end), *seen = calloc(n, sizeof *seen);
    stage_snapshots snaps = {&m, calloc(S * total, sizeof(float)), 0};
    model_grad_stages(&m, order, end);
    for (size_t i = 0; i < n; i++) seen[order[i]]++;
    for (size_t i = 0; i < n; i++) CHECK(seen[i] == 1);
    CHECK(end[S - 1] == n && end[0] > 0);
    int32_t tok[B * (T + 1)];
    for (int i = 0; i < B * (T + 1); i++) tok[i] = (i * 7 + 3) % (int)c.vocab;
    model_grad_hook hook = {&snaps, snapshot_stage};
    m.grad_hook = &hook;
    model_loss_and_grad(&m, tok, 1.0f);
    CHECK(snaps.calls == S);
    size_t bad = 0, unwritten = 0;
    for (size_t s = 0; s < S; s++)
        for (size_t k = s ? end[s - 1] : 0; k < end[s]; k++) {
            const param_spec *p = &m.table.v[order[k]];
            const float *g = snaps.snap + s * total + p->offset;
            size_t numel = p->rows * p->cols, nonzero = 0;
            for (size_t j = 0; j < numel; j++) nonzero += g[j] != 0;
            if (memcmp(g, m.grads + p->offset, numel * sizeof *g)) bad++, fprintf(stderr, "  %s: %s written after stage %zu\n", descriptor, p->name, s);
            if (!nonzero) unwritten++, fprintf(stderr, "  %s: %s not written by stage %zu\n", descriptor, p->name, s);
        }
    CHECK(bad == 0 && unwritten == 0);
    free(order), free(end), free(seen), free(snaps.snap);
    model_free(&m);
}
static void test_grad_stages_dense(void) { grad_stages_are_final("d2-w32-hd8-v50"); }
static void test_grad_stages_addons(void) {
    grad_stages_are_final("d3-w32-hd8-kv2-swiglu-untied-gnorm4-ve1-smear-bigram64-dcmha4-v50");
}
static void test_grad_stages_mla_moe(void) { grad_stages_are_final("d2-w32-hd8-mla-moe4k2-untied-v50"); }

// Initial weights drawn by name: MHA and MQA share every tensor but wk/wv, and those start alike by name
// (not so from one stream in table order, where l0.wk onwards differ); another seed gives other weights.
static void test_init_by_name_pairs_shared_tensors(void) {
    model_config ca, cb;
    model a, b;
    if (!CHECK(model_config_parse("d2-w32-hd8-v64", 0, &ca) == SX_OK && model_config_parse("d2-w32-hd8-kv1-v64", 0, &cb) == SX_OK &&
               model_init(&a, &ca) == SX_OK && model_init(&b, &cb) == SX_OK)) return;
    const char *shared[] = {"emb", "l0.wq", "l0.w_up", "l1.wq", "l1.w_up"};
    for (int by_name = 0; by_name < 2; by_name++) {
        if (by_name) { model_init_weights_by_name(&a, 5); model_init_weights_by_name(&b, 5); }
        else { model_init_weights(&a, 5); model_init_weights(&b, 5); }
        size_t same = 0;
        for (size_t k = 0; k < sizeof shared / sizeof *shared; k++) {
            const param_spec *pa = &a.table.v[param_table_find(&a.table, shared[k])], *pb = &b.table.v[param_table_find(&b.table, shared[k])];
            same += !memcmp(a.params + pa->offset, b.params + pb->offset, pa->rows * pa->cols * sizeof(float));
        }
        CHECK(same == (by_name ? 5u : 2u));   // in table order only emb and l0.wq come before the first difference
    }
    const param_spec *e = &a.table.v[param_table_find(&a.table, "l1.w_up")];
    float first = a.params[e->offset];
    model_init_weights_by_name(&a, 6);
    CHECK(a.params[e->offset] != first);
    model_free(&a);
    model_free(&b);
}

int main(void) {
    TEST_RUN(test_bad_descriptors);
    TEST_RUN(test_memory_without_allocating);
    TEST_RUN(test_grad_stages_dense);
    TEST_RUN(test_grad_stages_addons);
    TEST_RUN(test_grad_stages_mla_moe);
    TEST_RUN(test_large_batch_matches_sequences);
    TEST_RUN(test_large_batch_matches_sequences_extra_targets);
    TEST_RUN(test_gradcheck_extra_targets);
    TEST_RUN(test_extra_targets_zero_weight_is_plain);
    TEST_RUN(test_init_by_name_pairs_shared_tensors);
    TEST_RUN(test_gradcheck_mha_relu2_tied);
    TEST_RUN(test_gradcheck_gqa_swiglu_qknorm_untied);
    TEST_RUN(test_gradcheck_mqa_gelu_partial_rope_softcap);
    TEST_RUN(test_gradcheck_no_rope);
    TEST_RUN(test_fixture_mha_relu2_tied);
    TEST_RUN(test_fixture_gqa_swiglu_qknorm_untied);
    TEST_RUN(test_fixture_gelu_mqa);
    return testlib_finish("model");
}
