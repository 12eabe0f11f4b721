// LR schedule tests: hand-computed multipliers at known steps for every kind and warmup, spec parsing,
// schedule files (good and bad), the per-step array helper and the JSON/description echo.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optim/schedule.h"
#include "support/testlib.h"

static char tmpdir[64];

static lr_schedule sched; // large (file points inline): keep off the stack

static double mult_of(const char *spec, long total, long step) {
    if (!CHECK(lr_schedule_parse(spec, total, &sched) == SX_OK)) {
        fprintf(stderr, "  %s: %s\n", spec, sx_last_error());
        return NAN;
    }
    return lr_schedule_mult(&sched, step);
}

// Writes text to a file in the temporary directory; returns its path (static buffer).
static const char *write_file(const char *name, const char *text) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

// Expects spec to fail with status st and a message containing want.
static void expect_error(const char *spec, long total, sx_status st, const char *want) {
    sx_status got = lr_schedule_parse(spec, total, &sched);
    bool ok = got == st && strstr(sx_last_error(), want) != NULL;
    if (!ok) fprintf(stderr, "  spec '%s': status %d, message '%s' (want %d, '%s')\n", spec, got,
                     sx_last_error(), st, want);
    CHECK(ok);
}

static void test_constant(void) {
    for (long s = 1; s <= 10; s++) CHECK_CLOSE(mult_of("constant", 10, s), 1.0, 0, 0);
    // warmup=4: s/4 for s < 4, then 1.
    CHECK_CLOSE(mult_of("constant:warmup=4", 10, 1), 0.25, 1e-15, 0);
    CHECK_CLOSE(mult_of("constant:warmup=4", 10, 3), 0.75, 1e-15, 0);
    CHECK_CLOSE(mult_of("constant:warmup=4", 10, 4), 1.0, 0, 0);
    CHECK_CLOSE(mult_of("constant:warmup=4", 10, 10), 1.0, 0, 0);
}

static void test_cosine(void) {
    // T = 11, no warmup, min 0: p = s/11; s = 11 is 0.
    CHECK_CLOSE(mult_of("cosine", 11, 11), 0.0, 0, 1e-15);
    CHECK_CLOSE(mult_of("cosine", 11, 1), 0.5 * (1 + cos(M_PI / 11)), 1e-15, 0);
    // T = 11, warmup 1 step, min 0.1: p = (s-1)/10; s = 6 is the midpoint: 0.1 + 0.9·0.5 = 0.55.
    CHECK_CLOSE(mult_of("cosine:min=0.1,warmup=1", 11, 1), 1.0, 0, 0);
    CHECK_CLOSE(mult_of("cosine:min=0.1,warmup=1", 11, 6), 0.55, 1e-15, 0);
    CHECK_CLOSE(mult_of("cosine:min=0.1,warmup=1", 11, 11), 0.1, 1e-15, 0);
    // warmup=0.1 of 100 = 10 steps: s = 5 -> 0.5; s = 55 -> p = 0.5 -> 0.5.
    CHECK_CLOSE(mult_of("cosine:warmup=0.1", 100, 5), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("cosine:warmup=0.1", 100, 55), 0.5, 1e-15, 0);
    CHECK(sched.warmup_steps == 10);
}

static void test_linear(void) {
    CHECK_CLOSE(mult_of("linear", 10, 1), 0.9, 1e-15, 0);
    CHECK_CLOSE(mult_of("linear", 10, 5), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("linear", 10, 10), 0.0, 0, 1e-15);
    // min 0.2, warmup 2 of 12: p = (s-2)/10; s = 7 -> 1 - 0.8·0.5 = 0.6; s = 1 -> 0.5 (warmup).
    CHECK_CLOSE(mult_of("linear:min=0.2,warmup=2", 12, 7), 0.6, 1e-15, 0);
    CHECK_CLOSE(mult_of("linear:min=0.2,warmup=2", 12, 1), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("linear:min=0.2,warmup=2", 12, 12), 0.2, 1e-15, 0);
}

static void test_wsd(void) {
    // T = 100, decay 0.2 -> D = 20, decay starts after step 80.
    CHECK_CLOSE(mult_of("wsd:shape=linear", 100, 80), 1.0, 0, 0);
    CHECK_CLOSE(mult_of("wsd:shape=linear", 100, 90), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("wsd:shape=linear", 100, 100), 0.0, 0, 1e-15);
    CHECK(sched.decay_steps == 20);
    CHECK_CLOSE(mult_of("wsd:shape=cosine", 100, 90), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("wsd:shape=cosine", 100, 85), 0.5 * (1 + cos(M_PI / 4)), 1e-15, 0);
    // 1-sqrt (the default shape): s = 85 -> p = 0.25 -> 0.5.
    CHECK_CLOSE(mult_of("wsd", 100, 85), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of("wsd:shape=1-sqrt", 100, 85), 0.5, 1e-15, 0);
    // decay 0.5 (D = 50) to min 0.1 with warmup 10%: s = 5 -> 0.5; s = 50 -> 1; s = 75 -> 0.1 + 0.9·0.5.
    const char *spec = "wsd:decay=0.5,shape=linear,min=0.1,warmup=0.1";
    CHECK_CLOSE(mult_of(spec, 100, 5), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of(spec, 100, 50), 1.0, 0, 0);
    CHECK_CLOSE(mult_of(spec, 100, 75), 0.55, 1e-15, 0);
    CHECK_CLOSE(mult_of(spec, 100, 100), 0.1, 1e-15, 0);
    // decay=0 is a constant schedule.
    CHECK_CLOSE(mult_of("wsd:decay=0", 100, 100), 1.0, 0, 0);
}

static void test_warmup_values(void) {
    CHECK(lr_schedule_parse("cosine:warmup=0.02", 1000, &sched) == SX_OK && sched.warmup_steps == 20);
    CHECK(lr_schedule_parse("cosine:warmup=100", 1000, &sched) == SX_OK && sched.warmup_steps == 100);
    CHECK(lr_schedule_parse("cosine:warmup=1", 1000, &sched) == SX_OK && sched.warmup_steps == 1);
    CHECK(lr_schedule_parse("cosine:warmup=0", 1000, &sched) == SX_OK && sched.warmup_steps == 0);
    expect_error("cosine:warmup=1.5", 1000, SX_ERR_ARG, "whole number");
    expect_error("cosine:warmup=-1", 1000, SX_ERR_ARG, "warmup");
    expect_error("cosine:warmup=abc", 1000, SX_ERR_ARG, "abc");
    expect_error("cosine:warmup=1000", 1000, SX_ERR_ARG, "no room");
    expect_error("wsd:decay=0.5,warmup=0.6", 1000, SX_ERR_ARG, "overlap");
    expect_error("constant:warmup=2000", 1000, SX_ERR_ARG, "longer than the run");
    // Warmup given separately.
    CHECK(lr_schedule_parse("linear", 100, &sched) == SX_OK);
    CHECK(lr_schedule_set_warmup(&sched, "0.1") == SX_OK && sched.warmup_steps == 10);
    CHECK_CLOSE(lr_schedule_mult(&sched, 5), 0.5, 1e-15, 0);
    CHECK(lr_schedule_set_warmup(&sched, "100") == SX_ERR_ARG && sched.warmup_steps == 10);
    CHECK(lr_schedule_set_warmup(&sched, "x") == SX_ERR_ARG && sched.warmup_steps == 10);
}

static void test_bad_specs(void) {
    expect_error("foo", 100, SX_ERR_ARG, "unknown schedule 'foo'");
    expect_error("cosine:min=2", 100, SX_ERR_ARG, "min=2");
    expect_error("cosine:min=", 100, SX_ERR_ARG, "min=");
    expect_error("cosine:bogus=1", 100, SX_ERR_ARG, "bogus");
    expect_error("constant:min=0.1", 100, SX_ERR_ARG, "unknown option 'min'");
    expect_error("cosine:decay=0.1", 100, SX_ERR_ARG, "unknown option 'decay'");
    expect_error("wsd:shape=weird", 100, SX_ERR_ARG, "weird");
    expect_error("wsd:decay=1.5", 100, SX_ERR_ARG, "decay=1.5");
    expect_error("cosine:min", 100, SX_ERR_ARG, "KEY=VALUE");
    expect_error("file:", 100, SX_ERR_ARG, "file:PATH");
    expect_error("cosine", 0, SX_ERR_ARG, "total_steps");
    // Empty option lists are accepted.
    CHECK(lr_schedule_parse("cosine:", 100, &sched) == SX_OK && sched.kind == LR_COSINE);
}

static void test_file(void) {
    char spec[160];
    const char *p = write_file("frac.txt", "# a fraction schedule\n\n0 1\n0.5 1   # hold\n1 0.1\n");
    snprintf(spec, sizeof spec, "file:%s", p);
    // T = 10: x = s/10. s = 5 -> 1; s = 8 -> 1 + 0.6·(0.1 - 1) = 0.46; s = 10 -> 0.1.
    CHECK_CLOSE(mult_of(spec, 10, 5), 1.0, 1e-15, 0);
    CHECK_CLOSE(mult_of(spec, 10, 8), 0.46, 1e-14, 0);
    CHECK_CLOSE(mult_of(spec, 10, 10), 0.1, 1e-15, 0);
    CHECK(sched.n_points == 3 && !sched.file_in_steps);
    // With warmup 4 on top: s = 2 -> 0.5·1.
    snprintf(spec, sizeof spec, "file:%s,warmup=4", p);
    CHECK_CLOSE(mult_of(spec, 10, 2), 0.5, 1e-15, 0);

    p = write_file("steps.txt", "unit steps\n0 0\n10 1\n20 0.5\n");
    snprintf(spec, sizeof spec, "file:%s", p);
    CHECK_CLOSE(mult_of(spec, 40, 5), 0.5, 1e-15, 0);
    CHECK_CLOSE(mult_of(spec, 40, 15), 0.75, 1e-15, 0);
    CHECK_CLOSE(mult_of(spec, 40, 30), 0.5, 1e-15, 0); // held after the last point
    CHECK(sched.file_in_steps);

    // Fractions starting after 0 hold the first value before it.
    p = write_file("late.txt", "0.5 2\n1 1\n");
    snprintf(spec, sizeof spec, "file:%s", p);
    CHECK_CLOSE(mult_of(spec, 10, 1), 2.0, 0, 0);
    CHECK_CLOSE(mult_of(spec, 10, 9), 1.2, 1e-14, 0);
}

static void expect_file_error(const char *name, const char *text, sx_status st, const char *want) {
    char spec[160], msg[200];
    const char *p = write_file(name, text);
    snprintf(spec, sizeof spec, "file:%s", p);
    snprintf(msg, sizeof msg, "%s%s", p, want);
    expect_error(spec, 100, st, msg);
}

static void test_file_errors(void) {
    char spec[160];
    snprintf(spec, sizeof spec, "file:%s/missing.txt", tmpdir);
    expect_error(spec, 100, SX_ERR_IO, "missing.txt");
    expect_file_error("bad_num.txt", "0 1\n0.5 1.x\n", SX_ERR_FORMAT, ":2: malformed multiplier '1.x'");
    expect_file_error("bad_pos.txt", "# c\nzero 1\n", SX_ERR_FORMAT, ":2: malformed position 'zero'");
    expect_file_error("nonmono.txt", "0 1\n0.5 1\n0.4 0.1\n", SX_ERR_FORMAT, ":3: position 0.4 does not increase");
    expect_file_error("dup.txt", "0 1\n0 0.5\n", SX_ERR_FORMAT, ":2: position 0 does not increase");
    expect_file_error("range.txt", "0 1\n2 0.5\n", SX_ERR_FORMAT, ":2: position 2 must be a fraction");
    expect_file_error("neg.txt", "0 -1\n", SX_ERR_FORMAT, ":1: multiplier -1 is negative");
    expect_file_error("three.txt", "0 1 2\n", SX_ERR_FORMAT, ":1: expected 'POSITION MULTIPLIER'");
    expect_file_error("one.txt", "0.5\n", SX_ERR_FORMAT, ":1: expected 'POSITION MULTIPLIER'");
    expect_file_error("empty.txt", "# nothing\n\n", SX_ERR_FORMAT, ": no points");
    expect_file_error("unit.txt", "0 1\nunit steps\n", SX_ERR_FORMAT, ":2: 'unit steps'");
    expect_file_error("stepfrac.txt", "unit steps\n0 1\n2.5 1\n", SX_ERR_FORMAT, ":3: position 2.5 must be a whole");
    expect_file_error("nan.txt", "0 nan\n", SX_ERR_FORMAT, ":1: malformed multiplier 'nan'");
}

static void test_fill_and_echo(void) {
    CHECK(lr_schedule_parse("wsd:decay=0.25,warmup=10", 200, &sched) == SX_OK);
    double *m = malloc(200 * sizeof *m);
    lr_schedule_fill(&sched, m, 200);
    bool same = true;
    for (long s = 1; s <= 200; s++) same = same && m[s - 1] == lr_schedule_mult(&sched, s);
    CHECK(same);
    CHECK_CLOSE(m[0], 0.1, 1e-15, 0);
    CHECK_CLOSE(m[199], 0.0, 0, 1e-15);
    free(m);

    json_t *j = lr_schedule_to_json(&sched);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "kind")), "wsd") == 0);
    CHECK(j && json_integer_value(json_object_get(j, "warmup_steps")) == 10);
    CHECK(j && json_integer_value(json_object_get(j, "decay_steps")) == 50);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "shape")), "sqrt") == 0);
    CHECK(j && strcmp(json_string_value(json_object_get(j, "spec")), "wsd:decay=0.25,warmup=10") == 0);
    json_decref(j);
    char buf[200];
    lr_schedule_describe(&sched, buf, sizeof buf);
    CHECK(strcmp(buf, "wsd: warmup 10 steps, stable to step 150, 1-sqrt decay over 50 steps to 0") == 0);

    char spec[160];
    snprintf(spec, sizeof spec, "file:%s", write_file("echo.txt", "0 1\n1 0.5\n"));
    CHECK(lr_schedule_parse(spec, 10, &sched) == SX_OK);
    j = lr_schedule_to_json(&sched);
    json_t *pts = json_object_get(j, "points");
    CHECK(json_array_size(pts) == 2);
    CHECK(json_real_value(json_array_get(json_array_get(pts, 1), 1)) == 0.5);
    json_decref(j);
}

int main(void) {
    strcpy(tmpdir, "/tmp/sx_schedule_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    TEST_RUN(test_constant);
    TEST_RUN(test_cosine);
    TEST_RUN(test_linear);
    TEST_RUN(test_wsd);
    TEST_RUN(test_warmup_values);
    TEST_RUN(test_bad_specs);
    TEST_RUN(test_file);
    TEST_RUN(test_file_errors);
    TEST_RUN(test_fill_and_echo);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return testlib_finish("schedule");
}
