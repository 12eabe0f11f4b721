// libFuzzer target: vocab_load_gpt2. The input is encoder.json, a line "=====", then vocab.bpe.
#include "tok/vocab_io.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    size_t n1, off2;
    fuzz_split(data, n, "\n=====\n", &n1, &off2);
    fuzz_file(0, "encoder.json", data, n1);
    fuzz_file(1, "vocab.bpe", data + off2, n - off2);
    bpe_vocab *v = NULL;
    if (vocab_load_gpt2(fuzz_dir(), &v) == SX_OK) bpe_vocab_free(v);
    return 0;
}
