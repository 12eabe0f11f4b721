// libFuzzer target: vocab_load_sx (sextant's vocabulary file), then a round trip through the encoder; the
// input as given, then with its checksum made right.
#include "tok/vocab_io.h"
#include "fuzz_util.h"

static void read_one(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(0, "v.sxv", data, n);
    bpe_vocab *v = NULL;
    if (vocab_load_sx(path, &v) == SX_OK) {
        tok_ids ids = {0};
        tok_bytes back = {0};
        static const uint8_t text[] = "Hello, world! <|endoftext|> 123 \xc3\xa9t\xc3\xa9";
        if (bpe_encode(v, text, sizeof text - 1, true, &ids) == SX_OK) (void)bpe_decode(v, ids.ids, ids.n, &back);
        tok_ids_free(&ids);
        tok_bytes_free(&back);
        bpe_vocab_free(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    read_one(data, n);
    if (n >= 28) {
        uint8_t *fixed = fuzz_copy(data, n);
        fuzz_fix_crc(fixed, n - 4, 0, n - 4);
        read_one(fixed, n);
        free(fixed);
    }
    return 0;
}
