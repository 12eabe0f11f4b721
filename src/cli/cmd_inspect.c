// sextant inspect: exact parameter counts, FLOPs per token and memory of a model descriptor, with the MLA latent
// and MoE expert shapes; `--options` lists the descriptor grammar (the table in model/config.c).
#include <stdio.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "model/model.h"
#include "model/flops.h"

int cmd_inspect(int argc, char **argv) {
    static const flags_command cmd = {
        "inspect DESCRIPTOR [--vocab V] [--seq T] [--batch B] | inspect --options",
        "Prints the model's exact accounting, or the descriptor grammar.",
        0, 1, NULL};
    long vocab, seq, batch;
    bool options;
    const char *model_flag;
    const flag_def flags[] = {
        {"model", FLAG_STR, &model_flag, NULL, "the model descriptor, as other commands take it (or give it alone)"},
        {"options", FLAG_BOOL, &options, "false", "list the descriptor's options (the table docs/MODEL.md quotes)"},
        {"vocab", FLAG_INT, &vocab, "0", "vocabulary size (0: the descriptor's, default 8192)"},
        {"seq", FLAG_INT, &seq, "256", "context length for attention FLOPs"},
        {"batch", FLAG_INT, &batch, "8", "sequences per batch, for the activation memory"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    const size_t given = (size_t)a.npos + (*model_flag != 0);
    if (!st && options && given) st = sx_fail(SX_ERR_ARG, "--options lists the descriptor grammar: give it alone");
    if (!st && options) {
        model_config_print_options(stdout);
        return 0;
    }
    if (!st && given != 1) st = sx_fail(SX_ERR_ARG, "give one model descriptor, e.g. sextant inspect d6-kv2");
    if (!st && vocab < 0) st = sx_fail(SX_ERR_ARG, "--vocab must not be negative (0: the descriptor's)");
    if (!st && (seq <= 0 || batch <= 0)) st = sx_fail(SX_ERR_ARG, "--seq and --batch must be positive");
    model_config c;
    if (!st) st = model_config_parse(*model_flag ? model_flag : a.pos[0], (size_t)vocab, &c);
    if (st) return cli_report("inspect", st);
    // Declared, not allocated: a model of any size is described, however much memory this machine has.
    model m;
    size_t memory = 0;
    st = model_declare(&m, &c);
    if (!st) st = model_memory_bytes(&m, (size_t)batch, (size_t)seq, &memory);
    if (st) {
        model_free(&m);
        return cli_report("inspect", st);
    }
    model_flops f = model_flops_count(&c, (size_t)seq);
    printf("model            %s\n", c.descriptor);
    printf("shape            %zu layers, width %zu, %zu heads of %zu, %zu KV heads, MLP %s %zu, vocab %zu%s%s\n",
           c.n_layer, c.width, c.n_head, c.head_dim, c.n_kv_head, mlp_kind_name(c.mlp), c.ffn_hidden, c.vocab,
           c.untied ? ", untied head" : ", tied head", c.qk_norm ? ", QK-norm" : "");
    if (c.mixer == MIXER_MLA)
        printf("latent (MLA)     KV d_c %zu, query d_c' %zu%s, per head q·k rope %zu + nope %zu, value %zu; latent RMSNorm "
               "%s; KV cache %zu floats per position and layer\n", c.mla_dc, c.mla_dcq, c.mla_dcq ? "" : " (queries from h)",
               c.mla_rope, c.mla_nope, c.head_dim, c.mla_latent_norm ? "on" : "off", m.mixer->cache_floats(&c));
    if (c.n_expert) {
        char shared[48] = "", aux[48] = "", bias[48] = "";
        if (c.n_shared) snprintf(shared, sizeof shared, " (width %zu)", c.n_shared * c.expert_hidden);
        if (c.aux_coef > 0) snprintf(aux, sizeof aux, "aux loss %g", (double)c.aux_coef);
        if (c.bias_balance) snprintf(bias, sizeof bias, "selection bias (rate %g)", (double)c.bias_rate);
        if (c.qb_balance) snprintf(bias, sizeof bias, "quantile balancing");
        printf("experts (MoE)    %zu routed of width %zu, top-%zu, %zu shared%s, %s router; balancing: %s%s%s\n",
               c.n_expert, c.expert_hidden, c.top_k, c.n_shared, shared, c.router_sigmoid ? "sigmoid" : "softmax", aux,
               *aux && *bias ? ", " : "", *aux || *bias ? bias : "none");
    }
    printf("params total     %.0f\n", f.params_total);
    printf("params non-emb   %.0f\n", f.params_nonembed);
    printf("params active    %.0f\n", f.params_active);
    printf("FLOPs/token      %.4g train (fwd matmul %.4g + fwd attention %.4g, x3) at context %ld\n", f.train_per_token,
           f.fwd_matmul_per_token, f.fwd_attention_per_token, seq);
    printf("6N for contrast  %.4g (%.1f%% off)\n", 6 * f.params_total, 100 * (6 * f.params_total / f.train_per_token - 1));
    printf("KV cache         %.0f bytes/token (fp32)\n", f.kv_cache_bytes_per_token);
    const bool gib = memory >= (size_t)1 << 30;
    printf("memory           %.1f %s params+grads+activations+workspaces at batch %ld x %ld (+ optimizer state)\n",
           (double)memory / (gib ? 1 << 30 : 1 << 20), gib ? "GiB" : "MiB", batch, seq);
    model_free(&m);
    return 0;
}
