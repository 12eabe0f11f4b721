// compare: architecture or recipe variants judged by their ladders. Each variant's final losses across its
// rungs are fitted with L(C) = Linf + A·C^-alpha (optionally with the baseline's Linf shared by all), then
// at a target compute the report gives each variant's projected loss with a seed-bootstrap interval, its
// effective compute multiplier over the baseline ((L_base − Linf)/(L_var − Linf))^(1/alpha) (baseline's
// Linf and alpha) with an interval, its KV-cache bytes per token, and a verdict that names a winner only
// when the multiplier's interval excludes 1. Not responsible for training the ladders.
#ifndef SEXTANT_COMPARE_H
#define SEXTANT_COMPARE_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

// specs[0] is the baseline; dirs[i] holds ladder i's runs. *report receives a new reference.
sx_status compare_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, double target_flops,
                          bool shared_linf, json_t **report);
void compare_print(FILE *out, json_t *report);
// Final loss vs compute of every variant with its fit extended to the target, as an SVG.
sx_status compare_plot(const char *path, json_t *report);

#endif
