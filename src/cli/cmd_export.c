// sextant export / import-weights: a checkpoint to Hugging Face Llama-style safetensors + config.json and
// back (train/hf_export.h). The paths default to a Hugging Face model folder: config.json beside the
// weights.
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "model/model.h"
#include "runs/rundir.h"
#include "train/hf_export.h"

// config.json in the directory of path, unless given.
static void config_beside(const char *path, const char *given, char *out, size_t cap) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    if (*given) snprintf(out, cap, "%s", given);
    else snprintf(out, cap, "%s/config.json", dirname(copy));
}

// The context a checkpoint was trained with: "seq" of the run's config.json beside it, else fallback.
static size_t trained_context(const char *checkpoint, size_t fallback) {
    json_t *run = rundir_config_beside(checkpoint);
    json_int_t seq = json_integer_value(json_object_get(run, "seq"));
    json_decref(run);
    return seq > 0 ? (size_t)seq : fallback;
}

int cmd_export(int argc, char **argv) {
    static const flags_command cmd = {
        "export [--format safetensors] CHECKPOINT OUT.safetensors",
        "Writes a checkpoint's weights as safetensors with Hugging Face Llama tensor names (F32, exact)\n"
        "and an HF-style config.json, for the dense family: RMSNorm, RoPE, MHA/GQA/MQA, swiglu (a stock\n"
        "LlamaForCausalLM) or relu2/gelu (non-gated MLP, said in config.json). `sextant import-weights`\n"
        "reads them back. MLA, MoE and other variants with no Llama equivalent are refused.",
        2, 2, "give a checkpoint and an output file: sextant export CHECKPOINT OUT.safetensors"};
    const char *format, *config;
    long context;
    const flag_def flags[] = {
        {"format", FLAG_STR, &format, "safetensors", "output format (safetensors: Hugging Face Llama names)"},
        {"config", FLAG_STR, &config, "", "where to write the HF-style config.json (default: beside OUT)"},
        {"context", FLAG_INT, &context, "0", "max_position_embeddings (default: the run's seq, else 2048)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && strcmp(format, "safetensors")) st = sx_fail(SX_ERR_ARG, "--format %s: the one format is safetensors", format);
    if (!st && (context < 0 || context > MODEL_MAX_SEQ))   // beyond what any sextant model reads
        st = sx_fail(SX_ERR_ARG, "--context must be 1..%d positions (0: the run's seq), not %ld", MODEL_MAX_SEQ, context);
    if (st) return cli_report("export", st);
    char config_path[4200], dir[4096];
    config_beside(a.pos[1], config, config_path, sizeof config_path);
    snprintf(dir, sizeof dir, "%s", a.pos[1]);
    st = fs_mkdir_p(dirname(dir));   // a Hugging Face model is a folder: made when missing
    if (!st) st = hf_export(a.pos[0], a.pos[1], config_path, context ? (size_t)context : trained_context(a.pos[0], 2048));
    if (!st) printf("wrote %s and %s\n", a.pos[1], config_path);
    return cli_report("export", st);
}

int cmd_import_weights(int argc, char **argv) {
    static const flags_command cmd = {
        "import-weights IN.safetensors OUT.sxt [--config config.json]",
        "Reads Llama-style safetensors (sextant's export, or another writer's within the dense family:\n"
        "F32 or BF16) into a weights-only sextant checkpoint (for sample).",
        2, 2, "give the safetensors file and the checkpoint to write: sextant import-weights IN OUT.sxt"};
    const char *config;
    const flag_def flags[] = {
        {"config", FLAG_STR, &config, "", "the HF-style config.json (default: beside IN; not needed for sextant's own exports)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, 1, argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && access(a.pos[1], F_OK) == 0)   // e.g. a run's checkpoint.sxt, whose optimizer state would be lost
        st = sx_fail(SX_ERR_ARG, "%s exists: import-weights writes a new checkpoint and replaces none", a.pos[1]);
    if (st) return cli_report("import-weights", st);
    char config_path[4200];
    config_beside(a.pos[0], config, config_path, sizeof config_path);
    st = hf_import(a.pos[0], config_path, a.pos[1]);
    if (!st) printf("wrote %s\n", a.pos[1]);
    return cli_report("import-weights", st);
}
