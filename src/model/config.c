#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/config.h"

const char *mlp_kind_name(mlp_kind k) {
    static const char *names[] = {"relu2", "swiglu", "gelu"};
    return names[k];
}

// Numeric options: a name followed directly by a number ("kv2", "ropefrac0.5"). Names that are prefixes of
// others come after them ("ropefrac" before "rope", "dcq" before "dc").
typedef enum {
    OPT_W, OPT_HD, OPT_KV, OPT_FF, OPT_V, OPT_ROPEFRAC, OPT_ROPE, OPT_SOFTCAP, OPT_ATTCAP, OPT_SWA, OPT_LOCAL,
    OPT_DCQ, OPT_DC, OPT_RD, OPT_NOPE, OPT_EW, OPT_SHARED, OPT_AUX, OPT_BRATE, OPT_COUNT
} num_opt;
static const struct { const char *name; num_opt id; bool integer; } numeric_options[] = {
    {"ropefrac", OPT_ROPEFRAC, false}, {"softcap", OPT_SOFTCAP, false}, {"rope", OPT_ROPE, false},
    {"attcap", OPT_ATTCAP, false}, {"swa", OPT_SWA, true}, {"local", OPT_LOCAL, true}, {"dcq", OPT_DCQ, true},
    {"dc", OPT_DC, true}, {"rd", OPT_RD, true}, {"nope", OPT_NOPE, true}, {"ew", OPT_EW, true},
    {"shared", OPT_SHARED, true}, {"aux", OPT_AUX, false}, {"brate", OPT_BRATE, false},
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
    if (!strcmp(opt, "mla")) { c->mixer = MIXER_MLA; return SX_OK; }
    if (!strcmp(opt, "gate")) { c->attn_gate = true; return SX_OK; }
    if (!strcmp(opt, "nolatnorm")) { c->mla_latent_norm = false; return SX_OK; }
    if (!strcmp(opt, "sigmoid")) { c->router_sigmoid = true; return SX_OK; }
    if (!strcmp(opt, "balance=bias")) { c->bias_balance = true; return SX_OK; }
    unsigned long e, k;
    int used = 0;
    if (sscanf(opt, "moe%luk%lu%n", &e, &k, &used) == 2 && !opt[used]) {
        if (e == 0 || e > 4096 || k == 0 || k > e)
            return sx_fail(SX_ERR_ARG, "model '%s': option '%s' needs 1 <= top-k <= experts <= 4096", desc, opt);
        c->n_expert = e;
        c->top_k = k;
        return SX_OK;
    }
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
                   "softcap<S> relu2 swiglu gelu qknorm untied gate swa<W> local<K> attcap<S> mla dc<N> dcq<N> rd<N> "
                   "nope<N> nolatnorm moe<E>k<K> ew<N> shared<N> sigmoid aux<C> balance=bias brate<R>)", desc, opt);
}

// Attention options: gate, sliding window pattern, attention soft-cap, and the MLA shape.
static sx_status parse_attention(const char *desc, model_config *c, const double *num, const bool *has) {
    c->attn_softcap = has[OPT_ATTCAP] ? (float)num[OPT_ATTCAP] : 0.0f;
    c->window = has[OPT_SWA] ? (size_t)num[OPT_SWA] : 0;
    c->local_every = has[OPT_LOCAL] ? (size_t)num[OPT_LOCAL] : 0;
    if (has[OPT_SWA] && c->window == 0) return sx_fail(SX_ERR_ARG, "model '%s': swa<W> needs a window >= 1", desc);
    if (has[OPT_LOCAL] && (!c->window || c->local_every == 0))
        return sx_fail(SX_ERR_ARG, "model '%s': local<K> needs K >= 1 and a window (swa<W>)", desc);
    bool mla_opt = has[OPT_DC] || has[OPT_DCQ] || has[OPT_RD] || has[OPT_NOPE] || !c->mla_latent_norm;
    if (c->mixer != MIXER_MLA) {
        if (mla_opt) return sx_fail(SX_ERR_ARG, "model '%s': dc/dcq/rd/nope/nolatnorm need the 'mla' option", desc);
        return SX_OK;
    }
    if (has[OPT_KV] || c->qk_norm || has[OPT_ROPEFRAC])
        return sx_fail(SX_ERR_ARG, "model '%s': kv<N>, qknorm and ropefrac do not apply to mla (use rd<N>)", desc);
    size_t hd = c->head_dim;
    c->mla_rope = has[OPT_RD] ? (size_t)num[OPT_RD] : hd / 2 / 2 * 2;
    if (c->mla_rope % 2) return sx_fail(SX_ERR_ARG, "model '%s': MLA rope dims rd%zu must be even", desc, c->mla_rope);
    if (!has[OPT_NOPE] && c->mla_rope > hd)
        return sx_fail(SX_ERR_ARG, "model '%s': rd%zu exceeds the head dim %zu (give nope<N>)", desc, c->mla_rope, hd);
    c->mla_nope = has[OPT_NOPE] ? (size_t)num[OPT_NOPE] : hd - c->mla_rope;
    if (c->mla_nope + c->mla_rope == 0) return sx_fail(SX_ERR_ARG, "model '%s': MLA query/key head dim is 0", desc);
    c->mla_dc = has[OPT_DC] ? (size_t)num[OPT_DC] : 4 * hd;
    c->mla_dcq = has[OPT_DCQ] ? (size_t)num[OPT_DCQ] : 0;
    if (c->mla_dc == 0 || c->mla_dc > (1u << 16) || c->mla_dcq > (1u << 16) || c->mla_nope > (1u << 12) ||
        c->mla_rope > (1u << 12))
        return sx_fail(SX_ERR_ARG, "model '%s': MLA dimensions out of range", desc);
    c->n_kv_head = c->n_head;
    c->rope_frac = 1.0;
    c->rope_dim = c->mla_rope;
    return SX_OK;
}

// MoE options: experts, top-k, expert width, shared experts, scoring and balancing.
static sx_status parse_moe(const char *desc, model_config *c, const double *num, const bool *has) {
    bool moe_opt = has[OPT_EW] || has[OPT_SHARED] || has[OPT_AUX] || has[OPT_BRATE] || c->router_sigmoid ||
                   c->bias_balance;
    if (!c->n_expert) {
        if (moe_opt) return sx_fail(SX_ERR_ARG, "model '%s': ew/shared/aux/sigmoid/balance/brate need moe<E>k<K>", desc);
        return SX_OK;
    }
    c->expert_hidden = has[OPT_EW] ? (size_t)num[OPT_EW] : c->ffn_hidden;
    c->n_shared = has[OPT_SHARED] ? (size_t)num[OPT_SHARED] : 0;
    c->aux_coef = has[OPT_AUX] ? (float)num[OPT_AUX] : 0.0f;
    c->bias_rate = has[OPT_BRATE] ? (float)num[OPT_BRATE] : 1e-3f;
    if (c->expert_hidden == 0 || c->expert_hidden > (1u << 20) || c->n_shared > 64)
        return sx_fail(SX_ERR_ARG, "model '%s': expert width or shared expert count out of range", desc);
    return SX_OK;
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
    double num[OPT_COUNT] = {0};
    bool has[OPT_COUNT] = {0};
    c->mla_latent_norm = true;
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
    sx_status s = parse_attention(desc, c, num, has);
    return s ? s : parse_moe(desc, c, num, has);
}

bool model_config_layer_is_local(const model_config *c, size_t layer) {
    return c->window > 0 && !(c->local_every && layer % c->local_every == c->local_every - 1);
}

json_t *model_config_to_json(const model_config *c) {
    json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b, s:b, s:f, s:f, s:I, s:f}",
                     "descriptor", c->descriptor, "layers", (json_int_t)c->n_layer, "width", (json_int_t)c->width,
                     "head_dim", (json_int_t)c->head_dim, "heads", (json_int_t)c->n_head,
                     "kv_heads", (json_int_t)c->n_kv_head, "ffn_hidden", (json_int_t)c->ffn_hidden,
                     "vocab", (json_int_t)c->vocab, "mlp", mlp_kind_name(c->mlp), "qk_norm", c->qk_norm,
                     "untied", c->untied, "rope_base", c->rope_base, "rope_frac", c->rope_frac,
                     "rope_dim", (json_int_t)c->rope_dim, "softcap", (double)c->softcap);
    if (!j) return NULL;
    json_object_set_new(j, "mixer", json_string(c->mixer == MIXER_MLA ? "mla" : "gqa"));
    json_object_set_new(j, "attn_gate", json_boolean(c->attn_gate));
    json_object_set_new(j, "window", json_integer((json_int_t)c->window));
    json_object_set_new(j, "local_every", json_integer((json_int_t)c->local_every));
    json_object_set_new(j, "attn_softcap", json_real(c->attn_softcap));
    if (c->mixer == MIXER_MLA)
        json_object_set_new(j, "mla", json_pack("{s:I, s:I, s:I, s:I, s:b}", "dc", (json_int_t)c->mla_dc,
                                                "dcq", (json_int_t)c->mla_dcq, "rope", (json_int_t)c->mla_rope,
                                                "nope", (json_int_t)c->mla_nope, "latent_norm", c->mla_latent_norm));
    if (c->n_expert)
        json_object_set_new(j, "moe", json_pack("{s:I, s:I, s:I, s:I, s:s, s:f, s:b, s:f}", "experts",
                                                (json_int_t)c->n_expert, "top_k", (json_int_t)c->top_k,
                                                "expert_hidden", (json_int_t)c->expert_hidden,
                                                "shared", (json_int_t)c->n_shared,
                                                "score", c->router_sigmoid ? "sigmoid" : "softmax",
                                                "aux_coef", (double)c->aux_coef, "bias_balance", c->bias_balance,
                                                "bias_rate", (double)c->bias_rate));
    return j;
}
