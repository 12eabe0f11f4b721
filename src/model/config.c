#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/config.h"

const char *mlp_kind_name(mlp_kind k) {
    static const char *names[] = {"relu2", "swiglu", "gelu"};
    return names[k];
}

// Numeric options: a name followed directly by a number ("kv2", "ropefrac0.5"). Longest names first so
// "ropefrac" is not read as "rope" + "frac".
typedef enum { OPT_W, OPT_HD, OPT_KV, OPT_FF, OPT_V, OPT_ROPEFRAC, OPT_ROPE, OPT_SOFTCAP } num_opt;
static const struct { const char *name; num_opt id; bool integer; } numeric_options[] = {
    {"ropefrac", OPT_ROPEFRAC, false}, {"softcap", OPT_SOFTCAP, false}, {"rope", OPT_ROPE, false},
    {"hd", OPT_HD, true}, {"kv", OPT_KV, true}, {"ff", OPT_FF, true}, {"w", OPT_W, true}, {"v", OPT_V, true},
};

static bool parse_number(const char *s, bool integer, double *out) {
    char *end;
    if (!*s) return false;
    double v = integer ? (double)strtoll(s, &end, 10) : strtod(s, &end);
    if (*end || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

static sx_status parse_option(const char *desc, const char *opt, model_config *c, double *num, bool *has) {
    if (!strcmp(opt, "relu2")) { c->mlp = MLP_RELU2; return SX_OK; }
    if (!strcmp(opt, "swiglu")) { c->mlp = MLP_SWIGLU; return SX_OK; }
    if (!strcmp(opt, "gelu")) { c->mlp = MLP_GELU; return SX_OK; }
    if (!strcmp(opt, "qknorm")) { c->qk_norm = true; return SX_OK; }
    if (!strcmp(opt, "untied")) { c->untied = true; return SX_OK; }
    if (!strcmp(opt, "tied")) { c->untied = false; return SX_OK; }
    for (size_t i = 0; i < sizeof numeric_options / sizeof *numeric_options; i++) {
        size_t len = strlen(numeric_options[i].name);
        if (strncmp(opt, numeric_options[i].name, len)) continue;
        if (!parse_number(opt + len, numeric_options[i].integer, &num[numeric_options[i].id]))
            return sx_fail(SX_ERR_ARG, "model '%s': option '%s' needs a %s number after '%s'", desc, opt,
                           numeric_options[i].integer ? "whole" : "non-negative", numeric_options[i].name);
        has[numeric_options[i].id] = true;
        return SX_OK;
    }
    return sx_fail(SX_ERR_ARG,
                   "model '%s': unknown option '%s' (known: w<N> hd<N> kv<N> ff<N> v<N> rope<B> ropefrac<F> "
                   "softcap<S> relu2 swiglu gelu qknorm untied)", desc, opt);
}

sx_status model_config_parse(const char *desc, size_t vocab_override, model_config *c) {
    memset(c, 0, sizeof *c);
    if (!desc || strlen(desc) >= sizeof c->descriptor)
        return sx_fail(SX_ERR_ARG, "model descriptor missing or too long");
    strcpy(c->descriptor, desc);
    char *end;
    long L = desc[0] == 'd' ? strtol(desc + 1, &end, 10) : 0;
    if (desc[0] != 'd' || L <= 0 || L > 1000 || (*end && *end != '-'))
        return sx_fail(SX_ERR_ARG, "model '%s': must start with d<layers>, e.g. d6 or d6-kv2", desc);
    double num[8] = {0};
    bool has[8] = {0};
    char buf[128];
    strcpy(buf, end);
    for (char *save = NULL, *opt = strtok_r(buf, "-", &save); opt; opt = strtok_r(NULL, "-", &save)) {
        sx_status s = parse_option(desc, opt, c, num, has);
        if (s) return s;
    }
    c->n_layer = (size_t)L;
    c->width = has[OPT_W] ? (size_t)num[OPT_W] : 64 * (size_t)L;
    c->head_dim = has[OPT_HD] ? (size_t)num[OPT_HD] : 64;
    c->vocab = vocab_override ? vocab_override : has[OPT_V] ? (size_t)num[OPT_V] : 8192;
    if (c->width == 0 || c->width > (1u << 16)) return sx_fail(SX_ERR_ARG, "model '%s': width %zu out of range", desc, c->width);
    if (c->head_dim == 0 || c->width % c->head_dim)
        return sx_fail(SX_ERR_ARG, "model '%s': head dimension %zu does not divide width %zu", desc, c->head_dim, c->width);
    c->n_head = c->width / c->head_dim;
    c->n_kv_head = has[OPT_KV] ? (size_t)num[OPT_KV] : c->n_head;
    if (c->n_kv_head == 0 || c->n_head % c->n_kv_head)
        return sx_fail(SX_ERR_ARG, "model '%s': %zu KV heads do not divide %zu query heads", desc, c->n_kv_head, c->n_head);
    if (has[OPT_FF]) c->ffn_hidden = (size_t)num[OPT_FF];
    else if (c->mlp == MLP_SWIGLU) c->ffn_hidden = (8 * c->width / 3 + 15) / 16 * 16;
    else c->ffn_hidden = 4 * c->width;
    if (c->ffn_hidden == 0) return sx_fail(SX_ERR_ARG, "model '%s': MLP width must be positive", desc);
    if (c->vocab < 2 || c->vocab > (1u << 24)) return sx_fail(SX_ERR_ARG, "model '%s': vocabulary %zu out of range", desc, c->vocab);
    c->rope_base = has[OPT_ROPE] ? num[OPT_ROPE] : 10000.0;
    c->rope_frac = has[OPT_ROPEFRAC] ? num[OPT_ROPEFRAC] : 1.0;
    if (c->rope_base <= 1.0) return sx_fail(SX_ERR_ARG, "model '%s': RoPE base must be > 1", desc);
    if (c->rope_frac > 1.0) return sx_fail(SX_ERR_ARG, "model '%s': RoPE fraction must be in [0, 1]", desc);
    c->rope_dim = 2 * (size_t)floor(c->rope_frac * (double)c->head_dim / 2);
    c->softcap = has[OPT_SOFTCAP] ? (float)num[OPT_SOFTCAP] : 0.0f;
    return SX_OK;
}

json_t *model_config_to_json(const model_config *c) {
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b, s:b, s:f, s:f, s:I, s:f}",
                     "descriptor", c->descriptor, "layers", (json_int_t)c->n_layer, "width", (json_int_t)c->width,
                     "head_dim", (json_int_t)c->head_dim, "heads", (json_int_t)c->n_head,
                     "kv_heads", (json_int_t)c->n_kv_head, "ffn_hidden", (json_int_t)c->ffn_hidden,
                     "vocab", (json_int_t)c->vocab, "mlp", mlp_kind_name(c->mlp), "qk_norm", c->qk_norm,
                     "untied", c->untied, "rope_base", c->rope_base, "rope_frac", c->rope_frac,
                     "rope_dim", (json_int_t)c->rope_dim, "softcap", (double)c->softcap);
}
