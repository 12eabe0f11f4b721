// The tensor file container: round trip, and every kind of corruption refused with a message that names
// the file and the problem; a failed write leaves the previous file intact.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/tensorfile.h"
#include "support/testlib.h"

#define PATH "build/tests/tf_test.sxt"

static float data_a[100];
static int32_t data_b[7];

static sx_status write_sample(void) {
    tf_tensor t[2] = {{.name = "a", .dtype = TF_F32, .ndim = 2, .shape = {10, 10}, .nbytes = sizeof data_a, .data = data_a},
                      {.name = "b", .dtype = TF_I32, .ndim = 1, .shape = {7}, .nbytes = sizeof data_b, .data = data_b}};
    json_t *meta = json_pack("{s:s}", "hello", "world");
    sx_status st = tf_write(PATH, "sample", meta, t, 2);
    json_decref(meta);
    return st;
}

static unsigned char *slurp(size_t *n) {
    FILE *f = fopen(PATH, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void spit(const unsigned char *b, size_t n) {
    FILE *f = fopen(PATH, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void test_roundtrip(void) {
    for (int i = 0; i < 100; i++) data_a[i] = (float)i * 0.5f;
    for (int i = 0; i < 7; i++) data_b[i] = -i;
    CHECK(write_sample() == SX_OK);
    tensorfile f;
    CHECK(tf_read(PATH, "sample", &f) == SX_OK);
    const tf_tensor *a = tf_find(&f, "a"), *b = tf_find(&f, "b");
    CHECK(a && b && a->shape[0] == 10 && memcmp(a->data, data_a, sizeof data_a) == 0);
    CHECK(b && memcmp(b->data, data_b, sizeof data_b) == 0 && ((uintptr_t)b->data % 64) == 0);
    CHECK(!strcmp(json_string_value(json_object_get(f.meta, "hello")), "world"));
    tf_free(&f);
}

// Each corruption of a good file and the words the error must contain.
static void test_corruptions(void) {
    CHECK(write_sample() == SX_OK);
    size_t n;
    unsigned char *good = slurp(&n), *bad = malloc(n);
    struct { const char *what; size_t at; unsigned char value; size_t len; const char *msg; } cases[] = {
        {"magic", 0, 'X', n, "wrong magic"},
        {"version", 8, 9, n, "format version"},
        {"payload bit", n - 20, 0xFF, n, "checksum"},
        {"header length", 20, 0x7F, n, "header length"},
        {"truncated", 0, 'S', n - 100, "truncated"},
        {"tiny", 0, 'S', 10, "too short"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(bad, good, n);
        bad[cases[i].at] = cases[i].value;
        spit(bad, cases[i].len);
        tensorfile f;
        sx_status st = tf_read(PATH, "sample", &f);
        CHECK(st == SX_ERR_FORMAT);
        if (!CHECK(strstr(sx_last_error(), cases[i].msg) && strstr(sx_last_error(), PATH)))
            fprintf(stderr, "  %s: message was '%s'\n", cases[i].what, sx_last_error());
    }
    spit(good, n);
    tensorfile f;
    CHECK(tf_read(PATH, "checkpoint", &f) == SX_ERR_MISMATCH);
    CHECK(tf_read("build/tests/does-not-exist.sxt", NULL, &f) == SX_ERR_IO);
    free(good);
    free(bad);
}

static void test_failed_write_keeps_old_file(void) {
    CHECK(write_sample() == SX_OK);
    size_t n0;
    unsigned char *before = slurp(&n0);
    data_a[0] = 42;
    tf_fail_write_after = 3;
    sx_status st = write_sample();
    tf_fail_write_after = 0;
    CHECK(st == SX_ERR_IO && strstr(sx_last_error(), "intact"));
    size_t n1;
    unsigned char *after = slurp(&n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
}

int main(void) {
    TEST_RUN(test_roundtrip);
    TEST_RUN(test_corruptions);
    TEST_RUN(test_failed_write_keeps_old_file);
    return testlib_finish("tensorfile");
}
