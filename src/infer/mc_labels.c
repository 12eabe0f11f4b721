// mc_labels: see mc_labels.h.
#include <stdlib.h>
#include <string.h>
#include "infer/generate.h"
#include "infer/mc_labels.h"

sx_status mc_step_labels(mc_rollout_fn roll, void *ctx, const arith_problem *p, const char *solution, size_t r,
                         rng_state *rng, double *labels, size_t max_steps, size_t *n_steps, size_t *rollouts) {
    size_t len = strlen(solution), k = 0;
    char *prefix = sx_alloc(len + 1, "mc prefix");
    if (!prefix) return sx_fail(SX_ERR_NOMEM, "out of memory");
    sx_status st = SX_OK;
    for (size_t i = 0; i < len && k < max_steps && !st; i++) {
        if (solution[i] != '\n') continue;
        if (strchr(solution + i + 1, '\n') == NULL) {   // the last complete line: its outcome
            labels[k++] = arith_check_final(p, solution) ? 1.0 : 0.0;
            break;
        }
        memcpy(prefix, solution, i + 1);
        prefix[i + 1] = 0;
        size_t c = 0;
        st = roll(ctx, p, prefix, r, rng, &c);
        labels[k++] = (double)c / (double)r;
        if (rollouts) *rollouts += r;
    }
    free(prefix);
    *n_steps = k;
    return st;
}

sx_status mc_policy_rollout(void *ctx, const arith_problem *p, const char *prefix, size_t n, rng_state *rng,
                            size_t *correct) {
    const mc_policy *mp = ctx;
    size_t np = strlen(prefix) + ARITH_EXPR_MAX + 2, cap = mp->max_tokens + np + 1;
    int32_t *prompt = sx_alloc(np * sizeof *prompt, "mc prompt");
    char *text = sx_alloc(cap, "mc text");
    if (!prompt || !text) { free(prompt), free(text); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    size_t m = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    for (const char *c = prefix; *c; c++) prompt[m++] = (unsigned char)*c;
    int32_t stop = ARITH_EOT;
    size_t room = mp->d->max_ctx > m + 1 ? mp->d->max_ctx - m - 1 : 0;
    gen_config g = {.sampler = {.temperature = mp->temperature, .top_p = 1},
                    .max_new = mp->max_tokens < room ? mp->max_tokens : room, .stop = &stop, .n_stop = 1};
    gen_stream *s = NULL;
    sx_status st = generate_samples(mp->d, prompt, m, n, &g, rng, &s);
    size_t plen = strlen(prefix);
    *correct = 0;
    for (size_t i = 0; i < n && !st; i++) {   // the prefix plus the completion's complete lines
        memcpy(text, prefix, plen);
        arith_detokenize(s[i].tok, s[i].len, text + plen, cap - plen);
        char *nl = strrchr(text, '\n');
        if (nl) nl[1] = 0;
        *correct += arith_check_final(p, text);
    }
    if (s) gen_streams_free(mp->d, s, n);
    free(prompt);
    free(text);
    return st;
}
