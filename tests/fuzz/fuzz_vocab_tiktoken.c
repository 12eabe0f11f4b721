// libFuzzer target: vocab_load_tiktoken (rank files "base64 rank" per line) for the r50k_base encoding.
#include "tok/vocab_io.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(0, "r50k_base.tiktoken", data, n);
    bpe_vocab *v = NULL;
    if (vocab_load_tiktoken(path, NULL, &v) == SX_OK) {
        tok_ids ids = {0};
        static const uint8_t text[] = "Hello, world! 123";
        (void)bpe_encode(v, text, sizeof text - 1, false, &ids);
        tok_ids_free(&ids);
        bpe_vocab_free(v);
    }
    return 0;
}
