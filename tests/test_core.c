// core/status: allocation (alignment by size, zeroing, failure recorded with its purpose) and checked size
// arithmetic; core/fsutil: a JSON file written atomically.
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "core/status.h"
#include "support/testlib.h"

static void test_alloc_alignment(void) {
    // Small blocks: 64-byte aligned (cache lines, whole AVX-512 vectors). Large ones: 2 MiB aligned, so that
    // the huge-page advice covers all of them.
    size_t sizes[] = {1, 100, 4096, (size_t)4 << 20, ((size_t)9 << 20) + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = sx_calloc(sizes[i], "test block");
        CHECK(p != NULL);
        if (!p) continue;
        size_t align = sizes[i] >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
        CHECK((uintptr_t)p % align == 0);
        size_t nonzero = 0;
        for (size_t j = 0; j < sizes[i]; j++) nonzero += p[j] != 0;
        CHECK(nonzero == 0);
        memset(p, 0xab, sizes[i]); // the whole block is writable
        CHECK(p[sizes[i] - 1] == 0xab);
        sx_free(p);
    }
}

// A size whose rounding overflows (a real out-of-memory would abort under AddressSanitizer).
// sx_alloc_huge: 2 MiB aligned whatever the size, and the rounded-up block is writable.
static void test_alloc_huge(void) {
    unsigned char *p = sx_alloc_huge(1000, "small huge block");
    CHECK(p != NULL && (uintptr_t)p % SX_HUGE_PAGE == 0);
    if (p) {
        memset(p, 1, SX_HUGE_PAGE);
        CHECK(p[SX_HUGE_PAGE - 1] == 1);
    }
    sx_free(p);
}

static void test_alloc_failure_names_purpose(void) {
    CHECK(sx_alloc(SIZE_MAX - 5, "the impossible") == NULL);
    CHECK(strstr(sx_last_error(), "the impossible") != NULL);
    CHECK(sx_alloc_huge(SIZE_MAX - 5, "the impossible huge block") == NULL);
    CHECK(strstr(sx_last_error(), "the impossible huge block") != NULL);
}

// A message that wraps the last one (as a ladder names the run whose trainer failed) keeps it whole.
static void test_fail_wraps_last_error(void) {
    sx_fail(SX_ERR_ARG, "inner reason");
    CHECK(sx_fail(SX_ERR_IO, "run %s: %s", "r1", sx_last_error()) == SX_ERR_IO);
    CHECK(!strcmp(sx_last_error(), "run r1: inner reason"));
}

// fs_write_json replaces the file whole, and a write that fails (here: no document to write) leaves the old
// one as it was, with no temporary beside it (json_dump_file truncated it first); a directory is no file.
static void test_write_json_atomic(void) {
    const char *path = "build/tests/core_write.json";
    json_t *doc = json_pack("{s:i}", "a", 1), *back = NULL;
    CHECK(fs_write_json(path, doc, 0) == SX_OK);
    CHECK(fs_write_json(path, NULL, 0) == SX_ERR_IO);
    CHECK(fs_load_json(path, &back) == SX_OK && json_equal(doc, back));
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    // a directory, or a path ending in '/', is refused before anything is written (not "DIR/.tmpPID: cannot create")
    CHECK(fs_write_json("build/tests", doc, 0) == SX_ERR_ARG && strstr(sx_last_error(), "is a directory"));
    CHECK(fs_write_json("build/tests/new/", doc, 0) == SX_ERR_ARG && access("build/tests/new", F_OK) != 0);
    json_decref(doc);
    json_decref(back);
    unlink(path);
}

// fs_buffer: what was drawn replaces the file whole; a draw that failed (its status given to the commit)
// leaves the old file as it was, returns the drawer's status and message, and leaves no temporary.
static void test_buffer_commit(void) {
    const char *path = "build/tests/core_buffer.svg";
    fs_buffer b;
    CHECK(fs_buffer_open(&b) == SX_OK);
    fprintf(b.f, "<svg>%d</svg>\n", 1);
    CHECK(fs_buffer_commit(&b, path, SX_OK) == SX_OK && b.data == NULL);
    CHECK(fs_buffer_open(&b) == SX_OK);
    fprintf(b.f, "<svg>half");
    CHECK(fs_buffer_commit(&b, path, sx_fail(SX_ERR_FORMAT, "no points to draw")) == SX_ERR_FORMAT);
    CHECK(!strcmp(sx_last_error(), "no points to draw"));
    char text[64] = "", tmp[128];
    FILE *f = fopen(path, "r");
    CHECK(f && fgets(text, sizeof text, f) && !strcmp(text, "<svg>1</svg>\n"));
    if (f) fclose(f);
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    unlink(path);
}

static void test_mul_size(void) {
    size_t out = 0;
    CHECK(sx_mul_size(3, 7, &out) == 1 && out == 21);
    CHECK(sx_mul_size(0, SIZE_MAX, &out) == 1 && out == 0);
    CHECK(sx_mul_size(SIZE_MAX / 2, 3, &out) == 0);
    CHECK(strstr(sx_last_error(), "overflow") != NULL);
}

// The fault-injection hook fails exactly the k-th allocation through any entry point, with a message naming
// size and purpose; realloc keeps its block on failure; calloc's product is checked.
static void test_alloc_fault_injection(void) {
    long before = sx_alloc_count();
    sx_alloc_fail_at(3);
    void *a = sx_alloc(10, "first"), *b = sx_calloc(10, "second");
    char *c = sx_strdup("third", "the third");
    CHECK(a && b && c == NULL && strstr(sx_last_error(), "cannot allocate 6 bytes for the third"));
    void *d = sx_realloc(a, 100, "fourth");
    CHECK(d != NULL && sx_alloc_count() == before + 4);
    sx_alloc_fail_at(1);
    CHECK(sx_realloc(d, 1000, "grown table") == NULL && strstr(sx_last_error(), "1000 bytes for grown table"));
    memset(d, 1, 100);   // still d's block, still usable
    CHECK(sx_calloc_n((size_t)1 << 40, (size_t)1 << 40, "huge") == NULL && strstr(sx_last_error(), "size overflow"));
    sx_alloc_fail_at(0);
    char *e = sx_strdup("kept", "copy");
    CHECK(e && !strcmp(e, "kept"));
    SX_CHECK(e != NULL, "never fails here");
    sx_free(d);
    sx_free(b);
    sx_free(e);
}

// Parallel columns grow together and keep their rows; a column that cannot grow keeps its old block.
static void test_grow_columns(void) {
    long *step = NULL;
    double *loss = NULL;
    CHECK(sx_grow_columns((void *[]){&step, &loss}, (size_t[]){sizeof *step, 2 * sizeof *loss}, 2, 4, "table") == SX_OK);
    for (int i = 0; i < 4; i++) step[i] = i, loss[2 * i] = 0.5 * i, loss[2 * i + 1] = -i;
    CHECK(sx_grow_columns((void *[]){&step, &loss}, (size_t[]){sizeof *step, 2 * sizeof *loss}, 2, 64, "table") == SX_OK);
    CHECK(step[3] == 3 && loss[6] == 1.5 && loss[7] == -3);
    step[63] = 63, loss[127] = 1;   // the new rows are there, in both columns
    double *old_loss = loss;
    sx_alloc_fail_at(2);   // the second column's resize fails
    CHECK(sx_grow_columns((void *[]){&step, &loss}, (size_t[]){sizeof *step, 2 * sizeof *loss}, 2, 1 << 20, "the table's loss") ==
          SX_ERR_NOMEM);
    sx_alloc_fail_at(0);
    CHECK(loss == old_loss && loss[6] == 1.5 && strstr(sx_last_error(), "the table's loss"));
    CHECK(step[3] == 3 && step[63] == 63);   // the first column grew (or moved) with its rows
    sx_free(step);
    sx_free(loss);
}

int main(void) {
    TEST_RUN(test_alloc_alignment);
    TEST_RUN(test_alloc_huge);
    TEST_RUN(test_alloc_failure_names_purpose);
    TEST_RUN(test_fail_wraps_last_error);
    TEST_RUN(test_write_json_atomic);
    TEST_RUN(test_buffer_commit);
    TEST_RUN(test_mul_size);
    TEST_RUN(test_alloc_fault_injection);
    TEST_RUN(test_grow_columns);
    return testlib_finish("core");
}
