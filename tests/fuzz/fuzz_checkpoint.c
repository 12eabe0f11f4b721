// libFuzzer target: a checkpoint as the trainer resumes it — checkpoint_load into a fixed small model with
// its AdamW state (descriptor, vocabulary, tensor sizes, non-finite weights), then the training position
// (train/progress.h) and the data position (train/batches.h) read from its metadata. The input is a tensor
// file; its checksum is made right so that mutations reach the checks behind it.
#include "model/model.h"
#include "optim/optimizer.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "fuzz_util.h"

static model m;
static optimizer opt;
static batch_source *data;

// The model of tests/fuzz/corpus/checkpoint (d1-w8-hd8, vocabulary 16, as tests/fuzz/seed writes it), built once.
static void setup(void) {
    static int done;
    if (done) return;
    done = 1;
    model_config c;
    optimizer_config oc;
    optimizer_config_default(&oc);
    param_ref *refs = NULL;
    if (model_config_parse("d1-w8-hd8", 16, &c) || model_init(&m, &c) ||
        !(refs = calloc(m.table.n, sizeof *refs))) abort();
    model_param_refs(&m, refs);
    if (optimizer_init(&opt, &oc, refs, m.table.n) || batch_source_open(&data, "synthetic:16", 8, false, 1)) abort();
    free(refs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data_in, size_t n) {
    if (n < 32 || n > (1 << 20)) return 0;
    setup();
    uint8_t *fixed = fuzz_copy(data_in, n);
    fuzz_fix_crc(fixed, n - 8, 0, n - 8);
    const char *path = fuzz_file(0, "checkpoint.sxt", fixed, n);
    free(fixed);
    json_t *meta = NULL;
    if (checkpoint_load(path, &m, &opt, &meta) == SX_OK) {
        train_progress p;
        if (train_progress_read(meta, 100, opt.t, path, &p) == SX_OK) (void)batch_source_restore(data, p.data, path);
    }
    json_decref(meta);
    return 0;
}
