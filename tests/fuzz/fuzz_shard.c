// libFuzzer target: shard_open (token shards) on arbitrary bytes, with and without an expected vocabulary;
// the input as given, then with both checksums made right.
#include "data/shard.h"
#include "fuzz_util.h"

static void read_one(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(0, "s.bin", data, n);
    shard_file s;
    if (shard_open(&s, path, 0) == SX_OK) {
        volatile uint32_t sink = 0;
        for (uint64_t i = 0; i < s.h.n_tokens; i++) sink ^= shard_token(&s, i);
        (void)shard_check_vocab(&s, 64);
        shard_close(&s);
    }
    if (shard_open(&s, path, 256) == SX_OK) shard_close(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    read_one(data, n);
    if (n >= SHARD_HEADER_BYTES) {
        uint8_t *fixed = fuzz_copy(data, n);
        fuzz_fix_crc(fixed, 48, SHARD_HEADER_BYTES, n);
        fuzz_fix_crc(fixed, 52, 0, 52);
        read_one(fixed, n);
        free(fixed);
    }
    return 0;
}
