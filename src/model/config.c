#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/config.h"

const char *mlp_kind_name(mlp_kind k) {
    static const char *names[] = {"relu2", "swiglu", "gelu"};
    return names[k];
}

// The descriptor grammar: ONE table. Each row is an option as written in a descriptor (or, with no token, a
// field only derived from others) and says how it parses, which config field it sets, where that field goes in
// the JSON (rows in JSON order), and its line in `sextant inspect --options` (quoted by docs/MODEL.md). The
// parser, the error's list of known options, the JSON writer and the listing all walk this table.
typedef enum {
    ROW_DESCRIPTOR, ROW_LAYERS, OPT_W, OPT_HD, ROW_HEADS, OPT_KV, OPT_FF, OPT_V, OPT_RELU2, OPT_SWIGLU, OPT_GELU,
    OPT_QKNORM, OPT_UNTIED, OPT_TIED, OPT_ROPE, OPT_ROPEFRAC, ROW_ROPE_DIM, OPT_SOFTCAP, OPT_FP8, OPT_BIGRAM, OPT_BSIGN, OPT_SMEAR, OPT_GNORM, OPT_MLA, OPT_GATE, OPT_EGATE, OPT_XSA, OPT_VE, OPT_DCMHA, OPT_SWA,
    OPT_LOCAL, OPT_ATTCAP, OPT_DC, OPT_DCQ, OPT_RD, OPT_NOPE, OPT_NOLATNORM, OPT_MOE, ROW_TOP_K, OPT_EW, OPT_SHARED,
    OPT_SIGMOID, OPT_AUX, OPT_BALANCE, OPT_BRATE, OPT_QB, OPT_COUNT
} option_id;

typedef enum { DERIVED, FLAG, WHOLE, REAL, MOE_PAIR } option_kind;
typedef enum { T_STRING, T_SIZE, T_DOUBLE, T_FLOAT, T_BOOL, T_MLP, T_MIXER, T_SCORE } field_type;
typedef enum { SEC_TOP, SEC_MLA, SEC_MOE } section;

typedef struct {
    const char *token;      // as written (numbers: the prefix before the value); NULL for derived fields
    const char *spelling;   // in listings, e.g. "w<C>"
    option_kind kind;
    int value;              // FLAG: the value it sets
    section sec;            // SEC_MLA / SEC_MOE: only with `mla` / `moe<E>k<K>`, written in that JSON object
    const char *key;        // JSON key; NULL when another row writes the same field
    field_type type;
    size_t offset;          // offsetof(model_config, field)
    const char *meaning, *fallback;
} option_def;

#define F(field) offsetof(model_config, field)
static const option_def options[OPT_COUNT] = {
    [ROW_DESCRIPTOR] = {NULL, NULL, DERIVED, 0, SEC_TOP, "descriptor", T_STRING, F(descriptor), NULL, NULL},
    [ROW_LAYERS] = {NULL, NULL, DERIVED, 0, SEC_TOP, "layers", T_SIZE, F(n_layer), NULL, NULL},
    [OPT_W] = {"w", "w<C>", WHOLE, 0, SEC_TOP, "width", T_SIZE, F(width), "width", "64·L"},
    [OPT_HD] = {"hd", "hd<D>", WHOLE, 0, SEC_TOP, "head_dim", T_SIZE, F(head_dim), "head dimension (must divide C)", "64"},
    [ROW_HEADS] = {NULL, NULL, DERIVED, 0, SEC_TOP, "heads", T_SIZE, F(n_head), NULL, NULL},
    [OPT_KV] = {"kv", "kv<K>", WHOLE, 0, SEC_TOP, "kv_heads", T_SIZE, F(n_kv_head),
                "key/value heads (must divide H; `kv1` = MQA)", "H (MHA)"},
    [OPT_FF] = {"ff", "ff<F>", WHOLE, 0, SEC_TOP, "ffn_hidden", T_SIZE, F(ffn_hidden), "MLP hidden width",
                "4C (relu2, gelu); 8C/3 rounded up to a multiple of 16 (swiglu)"},
    [OPT_V] = {"v", "v<N>", WHOLE, 0, SEC_TOP, "vocab", T_SIZE, F(vocab),
               "vocabulary size (normally taken from the data)", "8192"},
    [OPT_RELU2] = {"relu2", "relu2", FLAG, MLP_RELU2, SEC_TOP, "mlp", T_MLP, F(mlp), "MLP kind: squared ReLU", "relu2"},
    [OPT_SWIGLU] = {"swiglu", "swiglu", FLAG, MLP_SWIGLU, SEC_TOP, NULL, T_MLP, F(mlp),
                    "MLP kind: SwiGLU (gate, up and down matrices)", "relu2"},
    [OPT_GELU] = {"gelu", "gelu", FLAG, MLP_GELU, SEC_TOP, NULL, T_MLP, F(mlp), "MLP kind: GELU (tanh form)", "relu2"},
    [OPT_QKNORM] = {"qknorm", "qknorm", FLAG, true, SEC_TOP, "qk_norm", T_BOOL, F(qk_norm),
                    "parameter-free RMSNorm (eps 1e-6) on each head of q and k, before RoPE", "off"},
    [OPT_UNTIED] = {"untied", "untied", FLAG, true, SEC_TOP, "untied", T_BOOL, F(untied), "separate output head",
                    "tied (head = embedding)"},
    [OPT_TIED] = {"tied", "tied", FLAG, false, SEC_TOP, NULL, T_BOOL, F(untied), "output head = embedding", "tied"},
    [OPT_ROPE] = {"rope", "rope<B>", REAL, 0, SEC_TOP, "rope_base", T_DOUBLE, F(rope_base), "RoPE base", "10000"},
    [OPT_ROPEFRAC] = {"ropefrac", "ropefrac<F>", REAL, 0, SEC_TOP, "rope_frac", T_DOUBLE, F(rope_frac),
                      "fraction of each head rotated (rot_dim = 2·floor(F·hd/2))", "1"},
    [ROW_ROPE_DIM] = {NULL, NULL, DERIVED, 0, SEC_TOP, "rope_dim", T_SIZE, F(rope_dim), NULL, NULL},
    [OPT_SOFTCAP] = {"softcap", "softcap<S>", REAL, 0, SEC_TOP, "softcap", T_FLOAT, F(softcap),
                     "logit soft-cap z = S·tanh(ℓ/S)", "off"},
    [OPT_FP8] = {"fp8", "fp8", FLAG, true, SEC_TOP, "fp8_mlp", T_BOOL, F(fp8_mlp),
                 "dense MLP products with fp8 e4m3 operands (power-of-two delayed amax scales, straight-through "
                 "backward; emulated: no speed-up on CPU)", "off"},
    [OPT_BIGRAM] = {"bigram", "bigram<R>", WHOLE, 0, SEC_TOP, "bigram_rows", T_SIZE, F(bigram_rows),
                    "bigram hash embedding: a table of R rows (hashed from each token and the one before) added to "
                    "the token embedding", "off"},
    [OPT_BSIGN] = {"bsign", "bsign<S>", WHOLE, 0, SEC_TOP, "bigram_signs", T_SIZE, F(bigram_signs),
                   "with `bigram`: S fixed ±1 sign patterns over the row, picked by the bigram (0: no signs)", "8192"},
    [OPT_SMEAR] = {"smear", "smear", FLAG, true, SEC_TOP, "smear", T_BOOL, F(smear),
                   "smear: each position's input embedding takes a gated share of the previous one's, "
                   "x_t + λ·σ(w·x_t[0:12])·x_{t−1}", "off"},
    [OPT_GNORM] = {"gnorm", "gnorm<R>", WHOLE, 0, SEC_TOP, "gated_norm_rank", T_SIZE, F(gnorm_rank),
                   "GatedNorm after every RMSNorm (pre-attention, pre-MLP, final): y = x̂ ⊙ σ(SiLU(x̂·W_downᵀ)·W_upᵀ), "
                   "rank R", "off"},
    [OPT_MLA] = {"mla", "mla", FLAG, MIXER_MLA, SEC_TOP, "mixer", T_MIXER, F(mixer),
                 "multi-head latent attention mixer (options dc … nolatnorm)", "GQA"},
    [OPT_GATE] = {"gate", "gate", FLAG, true, SEC_TOP, "attn_gate", T_BOOL, F(attn_gate),
                  "sigmoid output gate per head after attention (both mixers)", "off"},
    [OPT_EGATE] = {"egate", "egate", FLAG, true, SEC_TOP, "attn_gate_elementwise", T_BOOL, F(attn_gate_elem),
                   "sigmoid output gate per channel of each head (elementwise; replaces `gate`)", "off"},
    [OPT_XSA] = {"xsa", "xsa", FLAG, true, SEC_TOP, "xsa", T_BOOL, F(xsa),
                 "exclusive self attention: each head's output y loses its part along its own position's value, "
                 "y − (y·v)/(v·v + 1e-6)·v (both mixers)", "off"},
    [OPT_VE] = {"ve", "ve<N>", WHOLE, 0, SEC_TOP, "value_embeds", T_SIZE, F(value_embeds),
                "value embeddings: N token-indexed tables whose rows, gated per KV head, are added to the values of "
                "layers k and L−N+k (table k; GQA only)", "off"},
    [OPT_DCMHA] = {"dcmha", "dcmha<W>", WHOLE, 0, SEC_TOP, "dcmha_window", T_SIZE, F(dc_window),
                   "lightweight DC-MHA on the last layer: each query's per-head maps over its last W keys, mixed into "
                   "one map by per-token weights, added to each head's output with a per-token scale (GQA only)", "off"},
    [OPT_SWA] = {"swa", "swa<W>", WHOLE, 0, SEC_TOP, "window", T_SIZE, F(window),
                 "sliding-window attention: query t sees keys t−W+1..t (the kernel skips the rest)", "off"},
    [OPT_LOCAL] = {"local", "local<K>", WHOLE, 0, SEC_TOP, "local_every", T_SIZE, F(local_every),
                   "with `swa`: layer i is global (full causal) when i mod K = K−1, local otherwise", "all local"},
    [OPT_ATTCAP] = {"attcap", "attcap<S>", REAL, 0, SEC_TOP, "attn_softcap", T_FLOAT, F(attn_softcap),
                    "attention logit soft-cap s → S·tanh(s/S) (before the causal mask)", "off"},
    [OPT_DC] = {"dc", "dc<N>", WHOLE, 0, SEC_MLA, "dc", T_SIZE, F(mla_dc), "MLA KV latent d_c", "4·hd"},
    [OPT_DCQ] = {"dcq", "dcq<N>", WHOLE, 0, SEC_MLA, "dcq", T_SIZE, F(mla_dcq),
                 "MLA query latent d_cq (0: queries straight from h)", "0"},
    [OPT_RD] = {"rd", "rd<N>", WHOLE, 0, SEC_MLA, "rope", T_SIZE, F(mla_rope), "MLA decoupled RoPE dims d_R (even)",
                "hd/2 (even)"},
    [OPT_NOPE] = {"nope", "nope<N>", WHOLE, 0, SEC_MLA, "nope", T_SIZE, F(mla_nope),
                  "MLA per-head content q·k dims d_nope", "hd − d_R"},
    [OPT_NOLATNORM] = {"nolatnorm", "nolatnorm", FLAG, false, SEC_MLA, "latent_norm", T_BOOL, F(mla_latent_norm),
                       "MLA without the RMSNorm (gain, eps 1e-6) on the latents", "with"},
    [OPT_MOE] = {"moe", "moe<E>k<K>", MOE_PAIR, 0, SEC_MOE, "experts", T_SIZE, F(n_expert),
                 "MoE FFN: E experts, top-K routing", "dense"},
    [ROW_TOP_K] = {NULL, NULL, DERIVED, 0, SEC_MOE, "top_k", T_SIZE, F(top_k), NULL, NULL},
    [OPT_EW] = {"ew", "ew<N>", WHOLE, 0, SEC_MOE, "expert_hidden", T_SIZE, F(expert_hidden),
                "expert MLP width (small = fine-grained experts)", "the `ff` width"},
    [OPT_SHARED] = {"shared", "shared<N>", WHOLE, 0, SEC_MOE, "shared", T_SIZE, F(n_shared),
                    "N shared experts, always on (one MLP of width N·ew)", "0"},
    [OPT_SIGMOID] = {"sigmoid", "sigmoid", FLAG, true, SEC_MOE, "score", T_SCORE, F(router_sigmoid),
                     "router scores σ(u) instead of softmax(u)", "softmax"},
    [OPT_AUX] = {"aux", "aux<C>", REAL, 0, SEC_MOE, "aux_coef", T_FLOAT, F(aux_coef),
                 "Switch auxiliary balance loss coefficient", "0"},
    [OPT_BALANCE] = {"balance=bias", "balance=bias", FLAG, true, SEC_MOE, "bias_balance", T_BOOL, F(bias_balance),
                     "DeepSeek-V3 auxiliary-loss-free selection bias", "off"},
    [OPT_BRATE] = {"brate", "brate<R>", REAL, 0, SEC_MOE, "bias_rate", T_FLOAT, F(bias_rate),
                   "update rate of the selection bias", "1e-3"},
    [OPT_QB] = {"balance=qb", "balance=qb", FLAG, true, SEC_MOE, "qb_balance", T_BOOL, F(qb_balance),
                "Quantile Balancing: selection on logits u + b, b from each step's per-expert (1 − K/E) quantile of "
                "u − (K+1)-th largest u + b (no hyperparameter; needs K < E)", "off"},
};
#undef F

// The known options as "w<C> hd<D> ...", for the unknown-option error; or, with sec set, the tokens of that
// section's options as "dc/dcq/...". Writes into buf (size n).
static const char *option_list(char *buf, size_t n, bool only_sec, section sec) {
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < OPT_COUNT && used < n; i++) {
        const option_def *o = &options[i];
        // The section's own switch (moe<E>k<K>) is not one of the options that need it.
        if (!o->token || (only_sec && (o->sec != sec || o->kind == MOE_PAIR))) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? (only_sec ? "/" : " ") : "",
                                 only_sec ? o->token : o->spelling);
    }
    return buf;
}

void model_config_print_options(FILE *f) {
    fprintf(f, "| option | meaning | default |\n|---|---|---|\n");
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (options[i].token)
            fprintf(f, "| `%s` | %s | %s |\n", options[i].spelling, options[i].meaning, options[i].fallback);
}

static bool parse_number(const char *s, bool integer, double *out) {
    char *end;
    if (!*s) return false;
    double v = integer ? (double)strtoll(s, &end, 10) : strtod(s, &end);
    if (*end || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

// A flag's value into its field.
static void set_flag(model_config *c, const option_def *o) {
    char *field = (char *)c + o->offset;
    if (o->type == T_MLP) *(mlp_kind *)field = (mlp_kind)o->value;
    else if (o->type == T_MIXER) *(mixer_kind *)field = (mixer_kind)o->value;
    else *(bool *)field = o->value;
}

// Option i, about to be set: refused when it, or another option of the same field (relu2 and swiglu, tied and
// untied), was given before, where the later one would silently win.
static sx_status check_once(const char *desc, size_t i, const bool *has) {
    for (size_t j = 0; j < OPT_COUNT; j++)
        if (has[j] && options[j].token && options[j].offset == options[i].offset)
            return j == i ? sx_fail(SX_ERR_ARG, "model '%s': option '%s' is given twice", desc, options[i].spelling)
                          : sx_fail(SX_ERR_ARG, "model '%s': options '%s' and '%s' contradict each other", desc,
                                    options[j].spelling, options[i].spelling);
    return SX_OK;
}

// One option: a flag (exact token), moe<E>k<K>, or the number option with the longest token that prefixes it.
// Records which rows were given in has[] and numbers in num[].
static sx_status parse_option(const char *desc, const char *opt, model_config *c, double *num, bool *has) {
    long best = -1;
    for (size_t i = 0; i < OPT_COUNT; i++) {
        const option_def *o = &options[i];
        if (o->kind == FLAG && !strcmp(opt, o->token)) {
            sx_status st = check_once(desc, i, has);
            if (st) return st;
            set_flag(c, o);
            has[i] = true;
            return SX_OK;
        }
        if ((o->kind == WHOLE || o->kind == REAL) && !strncmp(opt, o->token, strlen(o->token)) &&
            (best < 0 || strlen(o->token) > strlen(options[best].token)))
            best = (long)i;
    }
    unsigned long e, k;
    int used = 0;
    if (sscanf(opt, "moe%luk%lu%n", &e, &k, &used) == 2 && !opt[used]) {
        sx_status st = check_once(desc, OPT_MOE, has);
        if (st) return st;
        if (e == 0 || e > 4096 || k == 0 || k > e)
            return sx_fail(SX_ERR_ARG, "model '%s': option '%s' needs 1 <= top-k <= experts <= 4096", desc, opt);
        c->n_expert = e;
        c->top_k = k;
        has[OPT_MOE] = true;
        return SX_OK;
    }
    if (best >= 0) {
        const option_def *o = &options[best];
        sx_status st = check_once(desc, (size_t)best, has);
        if (st) return st;
        if (!parse_number(opt + strlen(o->token), o->kind == WHOLE, &num[best]))
            return sx_fail(SX_ERR_ARG, "model '%s': option '%s' needs a %s number after '%s'", desc, opt,
                           o->kind == WHOLE ? "whole" : "non-negative", o->token);
        has[best] = true;
        return SX_OK;
    }
    char known[512];
    return sx_fail(SX_ERR_ARG, "model '%s': unknown option '%s' (known: %s)", desc, opt,
                   option_list(known, sizeof known, false, SEC_TOP));
}

// Whether any option of a section was given.
static bool section_given(const bool *has, section sec) {
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (has[i] && options[i].sec == sec) return true;
    return false;
}

// Attention options: gate, sliding window pattern, attention soft-cap, and the MLA shape.
static sx_status parse_attention(const char *desc, model_config *c, const double *num, const bool *has) {
    if (c->attn_gate_elem) c->attn_gate = true;
    c->attn_softcap = has[OPT_ATTCAP] ? (float)num[OPT_ATTCAP] : 0.0f;
    c->window = has[OPT_SWA] ? (size_t)num[OPT_SWA] : 0;
    c->local_every = has[OPT_LOCAL] ? (size_t)num[OPT_LOCAL] : 0;
    if (has[OPT_SWA] && c->window == 0) return sx_fail(SX_ERR_ARG, "model '%s': swa<W> needs a window >= 1", desc);
    if (has[OPT_LOCAL] && (!c->window || c->local_every == 0))
        return sx_fail(SX_ERR_ARG, "model '%s': local<K> needs K >= 1 and a window (swa<W>)", desc);
    c->value_embeds = has[OPT_VE] ? (size_t)num[OPT_VE] : 0;
    if (has[OPT_VE] && c->mixer == MIXER_MLA)
        return sx_fail(SX_ERR_ARG, "model '%s': ve<N> needs the GQA mixer (MLA caches a latent, not the values the "
                       "embeddings are added to)", desc);
    if (has[OPT_VE] && (c->value_embeds == 0 || 2 * c->value_embeds > c->n_layer))
        return sx_fail(SX_ERR_ARG, "model '%s': ve<N> needs 1 <= N <= layers/2 (table k feeds layers k and L−N+k)", desc);
    if (has[OPT_VE] && (c->width < 6 || c->n_kv_head * c->head_dim < 6))
        return sx_fail(SX_ERR_ARG, "model '%s': ve<N> needs a width and a KV width of at least 6 (its gate reads 6 "
                       "channels of each)", desc);
    c->dc_window = has[OPT_DCMHA] ? (size_t)num[OPT_DCMHA] : 0;
    if (has[OPT_DCMHA] && (c->mixer == MIXER_MLA || c->dc_window == 0 || c->dc_window > DCMHA_MAX_WINDOW))
        return sx_fail(SX_ERR_ARG, "model '%s': dcmha<W> needs the GQA mixer and 1 <= W <= %d", desc, DCMHA_MAX_WINDOW);
    if (c->mixer != MIXER_MLA) {
        char list[128];
        if (section_given(has, SEC_MLA))
            return sx_fail(SX_ERR_ARG, "model '%s': %s need the 'mla' option", desc,
                           option_list(list, sizeof list, true, SEC_MLA));
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
    if (!c->n_expert) {
        char list[128];
        if (section_given(has, SEC_MOE))
            return sx_fail(SX_ERR_ARG, "model '%s': %s need moe<E>k<K>", desc, option_list(list, sizeof list, true, SEC_MOE));
        return SX_OK;
    }
    c->expert_hidden = has[OPT_EW] ? (size_t)num[OPT_EW] : c->ffn_hidden;
    c->n_shared = has[OPT_SHARED] ? (size_t)num[OPT_SHARED] : 0;
    c->aux_coef = has[OPT_AUX] ? (float)num[OPT_AUX] : 0.0f;
    c->bias_rate = has[OPT_BRATE] ? (float)num[OPT_BRATE] : 1e-3f;
    if (c->qb_balance && (c->bias_balance || has[OPT_BRATE]))
        return sx_fail(SX_ERR_ARG, "model '%s': balance=qb replaces balance=bias and has no rate (drop %s)", desc,
                       c->bias_balance ? "balance=bias" : "brate");
    if (c->qb_balance && c->top_k >= c->n_expert)
        return sx_fail(SX_ERR_ARG, "model '%s': balance=qb needs top-k < experts (its threshold is the (K+1)-th score)", desc);
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
    if (desc[0] != 'd' || end == desc + 1 || (*end && *end != '-'))
        return sx_fail(SX_ERR_ARG, "model '%s': must start with d<layers>, e.g. d6 or d6-kv2", desc);
    if (L <= 0 || L > MODEL_MAX_LAYERS)
        return sx_fail(SX_ERR_ARG, "model '%s': %ld layers; a model has 1 to %d", desc, L, MODEL_MAX_LAYERS);
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
    if (vocab_override && has[OPT_V] && (size_t)num[OPT_V] != vocab_override)
        return sx_fail(SX_ERR_MISMATCH, "model '%s': the descriptor's vocabulary %.0f differs from the data's %zu: drop "
                       "-v%.0f to take the data's, or use data written with a %.0f-token vocabulary", desc, num[OPT_V],
                       vocab_override, num[OPT_V], num[OPT_V]);
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
    c->bigram_rows = has[OPT_BIGRAM] ? (size_t)num[OPT_BIGRAM] : 0;
    c->bigram_signs = !c->bigram_rows ? 0 : has[OPT_BSIGN] ? (size_t)num[OPT_BSIGN] : 8192;
    if (has[OPT_BIGRAM] && (c->bigram_rows < 2 || c->bigram_rows > (1u << 24)))
        return sx_fail(SX_ERR_ARG, "model '%s': bigram<R> needs 2 <= R <= 16777216 rows", desc);
    if (has[OPT_BSIGN] && (!c->bigram_rows || c->bigram_signs > (1u << 24)))
        return sx_fail(SX_ERR_ARG, "model '%s': bsign<S> needs the bigram<R> option and S <= 16777216", desc);
    if (c->fp8_mlp && c->n_expert)
        return sx_fail(SX_ERR_ARG, "model '%s': fp8 applies to the dense MLP, not to MoE experts", desc);
    if (c->smear && c->width < 12) return sx_fail(SX_ERR_ARG, "model '%s': smear needs a width of at least 12", desc);
    c->gnorm_rank = has[OPT_GNORM] ? (size_t)num[OPT_GNORM] : 0;
    if (has[OPT_GNORM] && (c->gnorm_rank < 1 || c->gnorm_rank > (1u << 16)))
        return sx_fail(SX_ERR_ARG, "model '%s': gnorm<R> needs a rank 1 <= R <= 65536", desc);
    sx_status s = parse_attention(desc, c, num, has);
    return s ? s : parse_moe(desc, c, num, has);
}

bool model_config_layer_is_local(const model_config *c, size_t layer) {
    return c->window > 0 && !(c->local_every && layer % c->local_every == c->local_every - 1);
}

// A mixer's name: the option that selects it, or "gqa" for the default (which no option names).
static const char *mixer_name(mixer_kind k) {
    for (size_t i = 0; i < OPT_COUNT; i++)
        if (options[i].type == T_MIXER && options[i].kind == FLAG && options[i].value == (int)k) return options[i].token;
    return "gqa";
}

json_t *model_config_to_json(const model_config *c) {
    json_t *j = json_object(), *sec[3] = {j, NULL, NULL};
    const bool sec_on[3] = {true, c->mixer == MIXER_MLA, c->n_expert > 0};
    static const char *const sec_name[3] = {NULL, "mla", "moe"};
    for (size_t i = 0; i < OPT_COUNT && j; i++) {
        const option_def *o = &options[i];
        if (!o->key || !sec_on[o->sec]) continue;
        if (!sec[o->sec]) json_object_set_new(j, sec_name[o->sec], sec[o->sec] = json_object());
        const char *field = (const char *)c + o->offset;
        json_t *v = NULL;
        switch (o->type) {
        case T_STRING: v = json_string(field); break;
        case T_SIZE: v = json_integer((json_int_t)*(const size_t *)field); break;
        case T_DOUBLE: v = json_real(*(const double *)field); break;
        case T_FLOAT: v = json_real((double)*(const float *)field); break;
        case T_BOOL: v = json_boolean(*(const bool *)field); break;
        case T_MLP: v = json_string(mlp_kind_name(*(const mlp_kind *)field)); break;
        case T_MIXER: v = json_string(mixer_name(*(const mixer_kind *)field)); break;
        case T_SCORE: v = json_string(*(const bool *)field ? "sigmoid" : "softmax"); break;
        }
        json_object_set_new(sec[o->sec], o->key, v);
    }
    return j;
}
