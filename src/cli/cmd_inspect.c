// sextant inspect: exact parameter counts, FLOPs per token and memory of a model descriptor.
#include <stdio.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "model/model.h"
#include "model/flops.h"

int cmd_inspect(int argc, char **argv) {
    long vocab, seq, batch;
    const flag_def flags[] = {
        {"vocab", FLAG_INT, &vocab, "0", "vocabulary size (0: the descriptor's, default 8192)"},
        {"seq", FLAG_INT, &seq, "256", "context length for attention FLOPs"},
        {"batch", FLAG_INT, &batch, "8", "sequences per batch, for the activation memory"},
    };
    size_t n = sizeof flags / sizeof *flags;
    const char *pos[1];
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, pos, 1, &npos,
                            "inspect DESCRIPTOR [--vocab V] [--seq T]", "Prints the model's exact accounting.", &st))
        return 0;
    if (!st && npos != 1) st = sx_fail(SX_ERR_ARG, "give one model descriptor, e.g. sextant inspect d6-kv2");
    if (!st && (vocab < 0 || seq <= 0 || batch <= 0)) st = sx_fail(SX_ERR_ARG, "--vocab, --seq and --batch must be positive");
    model_config c;
    if (!st) st = model_config_parse(pos[0], (size_t)vocab, &c);
    if (st) return cli_report("inspect", st);
    model m;
    st = model_init(&m, &c);
    if (!st) st = model_reserve(&m, (size_t)batch, (size_t)seq);
    if (st) return cli_report("inspect", st);
    model_flops f = model_flops_count(&c, (size_t)seq);
    printf("model            %s\n", c.descriptor);
    printf("shape            %zu layers, width %zu, %zu heads of %zu, %zu KV heads, MLP %s %zu, vocab %zu%s%s\n",
           c.n_layer, c.width, c.n_head, c.head_dim, c.n_kv_head, mlp_kind_name(c.mlp), c.ffn_hidden, c.vocab,
           c.untied ? ", untied head" : ", tied head", c.qk_norm ? ", QK-norm" : "");
    printf("params total     %.0f\n", f.params_total);
    printf("params non-emb   %.0f\n", f.params_nonembed);
    printf("params active    %.0f\n", f.params_active);
    printf("FLOPs/token      %.4g train (fwd matmul %.4g + fwd attention %.4g, x3) at context %ld\n", f.train_per_token,
           f.fwd_matmul_per_token, f.fwd_attention_per_token, seq);
    printf("6N for contrast  %.4g (%.1f%% off)\n", 6 * f.params_total, 100 * (6 * f.params_total / f.train_per_token - 1));
    printf("KV cache         %.0f bytes/token (fp32)\n", f.kv_cache_bytes_per_token);
    printf("memory           %.1f MiB params+grads+activations at batch %ld x %ld (+ optimizer state)\n",
           (double)model_arena_bytes(&m) / (1 << 20), batch, seq);
    model_free(&m);
    return 0;
}
