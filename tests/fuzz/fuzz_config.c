// libFuzzer target: model_config_parse (model descriptors) with and without a vocabulary override.
#include "model/config.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 512) return 0;
    char *desc = fuzz_str(data, n);
    model_config c;
    if (model_config_parse(desc, 0, &c) == SX_OK) json_decref(model_config_to_json(&c));
    if (model_config_parse(desc, 50257, &c) == SX_OK)
        for (size_t i = 0; i < c.n_layer; i++) (void)model_config_layer_is_local(&c, i);
    free(desc);
    return 0;
}
