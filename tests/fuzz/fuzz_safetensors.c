// libFuzzer target: st_read (safetensors, as `import-weights` reads them) on arbitrary bytes, then every
// tensor's last byte is read and the names are looked up.
#include "core/safetensors.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(0, "t.safetensors", data, n);
    st_file f;
    if (st_read(path, &f) == SX_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n; i++) {
            if (f.tensors[i].nbytes) sink ^= ((const uint8_t *)f.tensors[i].data)[f.tensors[i].nbytes - 1];
            if (st_find(&f, f.tensors[i].name) != &f.tensors[i]) abort();   // names are unique
        }
        st_free(&f);
    }
    return 0;
}
