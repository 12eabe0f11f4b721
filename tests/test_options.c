// train_options and its flag table: the defaults agree with the optimizer's own, and the command line the
// ladder's children get (flags_to_argv) reads back as exactly the options it came from. And the start every
// command shares (flags_start) with its choice flags.
#include <math.h>
#include <string.h>
#include "train/options.h"
#include "support/testlib.h"

static void test_defaults_agree(void) {
    train_options o;
    optimizer_config d;
    train_options_default(&o);
    optimizer_config_default(&d);
    CHECK(o.opt.kind == d.kind && o.opt.lr == d.lr && o.opt.beta1 == d.beta1 && o.opt.beta2 == d.beta2);
    CHECK(o.opt.eps == d.eps && o.opt.weight_decay == d.weight_decay && o.opt.decay_embed == d.decay_embed);
    CHECK(o.opt.muon_lr == d.muon_lr && o.opt.muon_momentum == d.muon_momentum);
    CHECK(o.opt.muon_weight_decay == d.muon_weight_decay && o.opt.clip_norm == d.clip_norm);
    CHECK(o.opt.lr == 3e-3f && !strcmp(o.optimizer, "adamw") && o.batch == 8 && o.seq == 256 && !o.echo);
    CHECK(train_options_check(&o) == SX_OK && o.opt.kind == OPT_ADAMW);
    o.optimizer = "muon";
    CHECK(train_options_check(&o) == SX_OK && o.opt.kind == OPT_MUON);
    o.optimizer = "sgd";
    CHECK(train_options_check(&o) == SX_ERR_ARG);
}

// Options -> argv -> options: the resolved echo (every flag) is the same JSON.
static void test_argv_roundtrip(void) {
    train_options a, b;
    train_options_default(&a);
    a.model = "d2-w48", a.schedule = "wsd:decay=0.2,shape=sqrt", a.warmup = "--odd", a.val_data = "";
    a.opt.lr = 0.0123456789f, a.opt.eps = 1e-8f, a.opt.muon_lr = (float)(0.02 * 128.0 / 24.0);
    a.tokens = 1.0 / 3.0, a.peak_gflops = 123.456789012345678, a.steps = 12345, a.resume = true, a.quiet = true;
    flag_def da[TRAIN_MAX_FLAGS], db[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(&a, da);
    char buf[8192], *argv[2 * TRAIN_MAX_FLAGS + 1];
    int argc = 0;
    CHECK(flags_to_argv(da, n, buf, sizeof buf, argv, &argc, 2 * TRAIN_MAX_FLAGS + 1) == SX_OK && (size_t)argc > n);
    CHECK(argv[argc] == NULL);
    train_options_default(&b);
    CHECK(train_options_parse_args(&b, argc, argv) == SX_OK);
    CHECK(b.opt.lr == a.opt.lr && b.opt.muon_lr == a.opt.muon_lr && b.tokens == a.tokens && b.peak_gflops == a.peak_gflops);
    CHECK(!strcmp(b.warmup, "--odd") && !strcmp(b.schedule, a.schedule) && b.resume && b.steps == 12345);
    train_options_flags(&b, db);
    json_t *ja = flags_to_json(da, n), *jb = flags_to_json(db, n);
    CHECK(json_equal(ja, jb));
    // The echo of a float is the shortest decimal that reads back as it (what a user types), not its binary
    // expansion: 3e-3, not 0.0030000000260770321.
    CHECK(json_real_value(json_object_get(ja, "lr")) == 0.012345679);
    CHECK(json_real_value(json_object_get(ja, "beta2")) == 0.95 && json_real_value(json_object_get(ja, "eps")) == 1e-8);
    json_decref(ja);
    json_decref(jb);
    // Too little room is an error, not a truncated command line.
    argc = 0;
    CHECK(flags_to_argv(da, n, buf, 64, argv, &argc, 2 * TRAIN_MAX_FLAGS + 1) == SX_ERR_ARG);
    argc = 0;
    CHECK(flags_to_argv(da, n, buf, sizeof buf, argv, &argc, 4) == SX_ERR_ARG);
}

static void test_bad_flags(void) {
    train_options o;
    train_options_default(&o);
    char *huge[] = {"--lr", "1e39"}, *unknown[] = {"--lrr", "1"}, *help[] = {"--help"};
    CHECK(train_options_parse_args(&o, 2, huge) == SX_ERR_ARG && strstr(sx_last_error(), "--lr"));
    CHECK(train_options_parse_args(&o, 2, unknown) == SX_ERR_ARG && strstr(sx_last_error(), "--lrr (did you mean --lr?"));
    char *far[] = {"--xyzzy", "1"};
    CHECK(train_options_parse_args(&o, 2, far) == SX_ERR_ARG && !strstr(sx_last_error(), "did you mean"));
    CHECK(train_options_parse_args(&o, 1, help) == SX_ERR_ARG);
    CHECK(o.opt.lr == 3e-3f);
}

// flags_near: typos within two edits (a swap counts one) and under half the word; not a short word's any change.
static void test_near(void) {
    CHECK(flags_near("modle", 5, "model") && flags_near("fitt", 4, "fit") && flags_near("imprt", 5, "import"));
    CHECK(flags_near("warmpu-steps", 12, "warmup-steps") && flags_near("lrr", 3, "lr"));
    CHECK(!flags_near("xyz", 3, "fit") && !flags_near("ab", 2, "lr") && !flags_near("seed", 4, "steps"));
}

// A command's start (flags_start) and a FLAG_CHOICE row: the index of the word given, the default's, the
// refusal of another word naming the choices, the word echoed in JSON and on a command line that reads back.
static void test_command_start_and_choice(void) {
    int mode;
    long k;
    const flag_def flags[] = {
        {"mode", FLAG_CHOICE, &(flag_choice){&mode, "size|role|auto"}, "role", "how"},
        {"k", FLAG_INT, &k, "3", "how many"},
    };
    static const flags_command cmd = {"demo A B [C]", NULL, 2, 3, "give A and B"};
    flags_args a;
    char *ok[] = {"x", "--mode", "auto", "y"}, *dflt[] = {"x", "y", "z"}, *bad[] = {"x", "y", "--mode=sizes"};
    char *few[] = {"x", "--k", "4"}, *many[] = {"w", "x", "y", "z"};
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 4, ok, &a) && a.st == SX_OK && mode == 2 && k == 3);
    CHECK(a.npos == 2 && !strcmp(a.pos[0], "x") && !strcmp(a.pos[1], "y"));
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 3, dflt, &a) && a.st == SX_OK && mode == 1 && a.npos == 3);
    json_t *j = flags_to_json(flags, FLAGS_COUNT(flags));
    CHECK(!strcmp(json_string_value(json_object_get(j, "mode")), "role"));
    json_decref(j);
    char buf[256], *argv[8];
    int argc = 0;
    mode = 0;
    CHECK(flags_to_argv(flags, FLAGS_COUNT(flags), buf, sizeof buf, argv, &argc, 8) == SX_OK && argc == 4);
    CHECK(!strcmp(argv[0], "--mode") && !strcmp(argv[1], "size"));
    argv[argc++] = "p", argv[argc++] = "q";
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a) && a.st == SX_OK && mode == 0);
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 3, bad, &a) && a.st == SX_ERR_ARG);
    CHECK(!strcmp(sx_last_error(), "--mode: 'sizes' is not size, role or auto"));
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 3, few, &a) && a.st == SX_ERR_ARG && k == 4);
    CHECK(!strcmp(sx_last_error(), "give A and B"));
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 4, many, &a) && a.st == SX_ERR_ARG);
    CHECK(strstr(sx_last_error(), "unexpected argument 'z'") != NULL);
}

// flags_given: what argv named, not what differs from the default: a flag given at its default value is
// given, --no-NAME gives a boolean, and a flag left out is not given even when a default sets it.
static void test_given(void) {
    long n;
    bool quiet;
    const char *vocab;
    const flag_def flags[] = {
        {"n", FLAG_INT, &n, "200", "how many"},
        {"quiet", FLAG_BOOL, &quiet, "true", "less output"},
        {"vocab", FLAG_STR, &vocab, "v.sxv", "vocabulary"},
    };
    static const flags_command cmd = {"demo A", NULL, 1, 1, "give A"};
    flags_args a;
    char *at_default[] = {"x", "--n", "200", "--no-quiet"}, *none[] = {"x"}, *eq[] = {"--vocab=v.sxv", "x"};
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 4, at_default, &a) && a.st == SX_OK && n == 200 && !quiet);
    CHECK(flags_given(&a, "n") && flags_given(&a, "quiet") && !flags_given(&a, "vocab"));
    CHECK(!strcmp(flags_first_given(&a, "vocab,quiet,n"), "quiet"));
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 1, none, &a) && a.st == SX_OK && quiet);
    CHECK(!flags_given(&a, "n") && !flags_given(&a, "quiet") && flags_first_given(&a, "n,quiet,vocab") == NULL);
    CHECK(!flags_start(&cmd, flags, FLAGS_COUNT(flags), 2, eq, &a) && a.st == SX_OK);
    CHECK(!strcmp(flags_first_given(&a, "n,vocab"), "vocab") && !flags_given(&a, "n"));
    CHECK(flags_only(&a, "n,vocab", "this mode") == SX_OK);
    CHECK(flags_only(&a, "n,quiet", "this mode") == SX_ERR_ARG);
    CHECK(!strcmp(sx_last_error(), "--vocab does not apply to this mode (it takes --n or --quiet)"));
    CHECK(flags_only(&a, "", "this mode") == SX_ERR_ARG && strstr(sx_last_error(), "(it takes no flags)"));
}

int main(void) {
    TEST_RUN(test_given);
    TEST_RUN(test_defaults_agree);
    TEST_RUN(test_argv_roundtrip);
    TEST_RUN(test_bad_flags);
    TEST_RUN(test_near);
    TEST_RUN(test_command_start_and_choice);
    return testlib_finish("options");
}
