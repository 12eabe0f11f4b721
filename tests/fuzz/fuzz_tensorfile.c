// libFuzzer target: tf_read (tensor files and checkpoints) on arbitrary bytes, then every tensor is read.
#include "core/tensorfile.h"
#include "fuzz_util.h"

// Reads one file; the input as given, then with its checksum made right.
static void read_one(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(0, "t.sxt", data, n);
    tensorfile f;
    if (tf_read(path, NULL, &f) == SX_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n; i++)
            if (f.tensors[i].nbytes) sink ^= ((const uint8_t *)f.tensors[i].data)[f.tensors[i].nbytes - 1];
        (void)tf_find(&f, "tok_emb");
        tf_free(&f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    read_one(data, n);
    if (n >= 32) {
        uint8_t *fixed = fuzz_copy(data, n);
        fuzz_fix_crc(fixed, n - 8, 0, n - 8);
        read_one(fixed, n);
        free(fixed);
    }
    return 0;
}
