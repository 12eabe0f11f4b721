// Training-loop building blocks: a model must be able to memorise one batch (loss < 0.1) with AdamW and
// with Muon; checkpoints round-trip exactly.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/runlog.h"
#include "support/testlib.h"

static double overfit(optimizer_kind kind, int steps) {
    model_config c;
    model m;
    model_config_parse("d2-w32-hd8-v64", 0, &c);
    model_init(&m, &c);
    model_reserve(&m, 2, 16);
    model_init_weights(&m, 3);
    int32_t tok[2 * 17];
    rng_state r;
    rng_seed(&r, 1);
    for (int i = 0; i < 34; i++) tok[i] = (int32_t)rng_below(&r, 64);
    param_ref refs[64];
    model_param_refs(&m, refs);
    optimizer_config oc;
    optimizer_config_default(&oc);
    oc.kind = kind;
    oc.lr = 1e-2f;
    oc.weight_decay = 0;
    optimizer o;
    optimizer_init(&o, &oc, refs, m.table.n);
    double loss = 0;
    for (int s = 0; s < steps; s++) {
        model_zero_grad(&m);
        loss = model_loss_and_grad(&m, tok, 1.0f);
        optimizer_step(&o, 1.0);
    }
    CHECK(model_loss(&m, tok, NULL, &loss) == SX_OK);
    // Every allocation the forward makes (kernel scratch) failing in turn: the status says so, whatever the loss.
    double failed_loss;
    for (long k = 1; k <= 4; k++) {
        sx_alloc_fail_at(k);
        const long before = sx_alloc_count();
        sx_status st = model_loss(&m, tok, NULL, &failed_loss);
        const bool reached = sx_alloc_count() - before >= k;
        sx_alloc_fail_at(0);
        if (reached && !CHECK(st == SX_ERR_NOMEM)) fprintf(stderr, "  allocation %ld failed, status %d\n", k, st);
    }
    optimizer_free(&o);
    model_free(&m);
    return loss;
}

static void test_overfit_adamw(void) {
    double l = overfit(OPT_ADAMW, 200);
    if (!CHECK(l < 0.1)) fprintf(stderr, "  final loss %g\n", l);
}

static void test_overfit_muon(void) {
    double l = overfit(OPT_MUON, 200);
    if (!CHECK(l < 0.1)) fprintf(stderr, "  final loss %g\n", l);
}

static void test_checkpoint_roundtrip(void) {
    model_config c;
    model a, b;
    model_config_parse("d1-w32-hd8-kv2-swiglu-untied-v40", 0, &c);
    model_init(&a, &c);
    model_init(&b, &c);
    model_init_weights(&a, 7);
    model_init_weights(&b, 8);
    param_ref ra[32], rb[32];
    model_param_refs(&a, ra);
    model_param_refs(&b, rb);
    optimizer_config oc;
    optimizer_config_default(&oc);
    oc.kind = OPT_MUON;
    optimizer oa, ob;
    optimizer_init(&oa, &oc, ra, a.table.n);
    optimizer_init(&ob, &oc, rb, b.table.n);
    for (size_t i = 0; i < oa.state_floats; i++) oa.state[i] = (float)i * 1e-3f;
    oa.t = 17;
    json_t *meta = json_pack("{s:i}", "step", 17);
    const char *path = "build/tests/ckpt_roundtrip.sxt";
    CHECK(checkpoint_save(path, &a, &oa, meta) == SX_OK);
    json_t *got = NULL;
    CHECK(checkpoint_load(path, &b, &ob, &got) == SX_OK);
    CHECK(memcmp(a.params, b.params, a.table.total * sizeof(float)) == 0);
    CHECK(memcmp(oa.state, ob.state, oa.state_floats * sizeof(float)) == 0);
    CHECK(ob.t == 17);
    CHECK(json_integer_value(json_object_get(got, "step")) == 17);
    // A different model must be refused with a message naming both.
    model_config c2;
    model d;
    model_config_parse("d1-w32-hd8-v40", 0, &c2);
    model_init(&d, &c2);
    CHECK(checkpoint_load(path, &d, NULL, NULL) == SX_ERR_MISMATCH);
    CHECK(strstr(sx_last_error(), "d1-w32-hd8-kv2-swiglu-untied-v40") != NULL);
    json_decref(meta);
    json_decref(got);
    optimizer_free(&oa);
    optimizer_free(&ob);
    model_free(&a);
    model_free(&b);
    model_free(&d);
}

// Durations for people: tenths of a second under a minute (never "0m00s"), then minutes, then hours.
static void test_format_duration(void) {
    static const struct { double s; const char *text; } cases[] = {
        {0.04, "0.0s"}, {0.43, "0.4s"}, {42.0, "42.0s"}, {59.9, "59.9s"}, {59.97, "1m00s"},
        {247, "4m07s"}, {3720, "1h02m"}, {-1, "0.0s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[32];
        runlog_format_duration(cases[i].s, buf, sizeof buf);
        CHECK(strcmp(buf, cases[i].text) == 0);
    }
}

int main(void) {
    TEST_RUN(test_format_duration);
    TEST_RUN(test_overfit_adamw);
    TEST_RUN(test_overfit_muon);
    TEST_RUN(test_checkpoint_roundtrip);
    return testlib_finish("train");
}
