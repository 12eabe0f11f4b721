// schedule: see schedule.h.
#include "core/status.h"
#include "optim/schedule.h"

#include "core/lines.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"constant", "cosine", "linear", "wsd", "file"};
static const char *const shape_names[] = {"linear", "cosine", "sqrt"};

// Decay from 1 (p = 0) to min (p = 1).
static double decay_shape(lr_decay_shape shape, double p, double min) {
    double f;
    switch (shape) {
    case LR_SHAPE_COSINE: f = 0.5 * (1.0 + cos(M_PI * p)); break;
    case LR_SHAPE_SQRT: f = 1.0 - sqrt(p); break;
    default: f = 1.0 - p; break;
    }
    return min + (1.0 - min) * f;
}

static double file_interp(const lr_schedule *s, double x) {
    const double *px = s->px, *py = s->py;
    size_t n = s->n_points;
    if (x <= px[0]) return py[0];
    if (x >= px[n - 1]) return py[n - 1];
    size_t lo = 0, hi = n - 1; // px[lo] < x < px[hi]
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (px[mid] <= x) lo = mid;
        else hi = mid;
    }
    double w = (x - px[lo]) / (px[hi] - px[lo]);
    return py[lo] + w * (py[hi] - py[lo]);
}

double lr_schedule_mult(const lr_schedule *s, long step) {
    SX_CHECK(step >= 1 && step <= s->total_steps, "lr_schedule_mult: step must be in 1..total_steps");
    const long T = s->total_steps, W = s->warmup_steps;
    double warm = step < W ? (double)step / (double)W : 1.0;
    double base = 1.0;
    switch (s->kind) {
    case LR_CONSTANT: break;
    case LR_COSINE:
    case LR_LINEAR:
        if (step > W)
            base = decay_shape(s->kind == LR_COSINE ? LR_SHAPE_COSINE : LR_SHAPE_LINEAR,
                               (double)(step - W) / (double)(T - W), s->min_ratio);
        break;
    case LR_WSD:
        if (step > T - s->decay_steps)
            base = decay_shape(s->shape, (double)(step - (T - s->decay_steps)) / (double)s->decay_steps,
                               s->min_ratio);
        break;
    case LR_FILE: base = file_interp(s, s->file_in_steps ? (double)step : (double)step / (double)T); break;
    }
    return warm * base;
}

void lr_schedule_fill(const lr_schedule *s, double *mult, long n) {
    SX_CHECK(n >= 0 && n <= s->total_steps, "lr_schedule: n must lie in 0..total_steps");
    for (long i = 0; i < n; i++) mult[i] = lr_schedule_mult(s, i + 1);
}

// ---- parsing ----

// Parses all of text as a finite double.
static bool parse_double(const char *text, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}

static sx_status parse_warmup(const char *value, long total_steps, long *out) {
    double v;
    if (!parse_double(value, &v) || v < 0)
        return sx_fail(SX_ERR_ARG, "warmup '%s' is not a number >= 0 (a fraction below 1 or whole steps)",
                       value);
    if (v < 1) {
        *out = (long)llround(v * (double)total_steps);
    } else {
        if (v != floor(v) || v > 1e15)
            return sx_fail(SX_ERR_ARG, "warmup %s: give a fraction of the run below 1 or a whole number of "
                                       "steps", value);
        *out = (long)v;
    }
    return SX_OK;
}

// Checks the combination of settings and derives decay_steps.
static sx_status validate(lr_schedule *s) {
    const long T = s->total_steps, W = s->warmup_steps;
    if (s->kind == LR_WSD) s->decay_steps = (long)llround(s->decay_fraction * (double)T);
    switch (s->kind) {
    case LR_COSINE:
    case LR_LINEAR:
        if (W >= T)
            return sx_fail(SX_ERR_ARG, "schedule '%s': warmup of %ld steps leaves no room to decay in %ld steps",
                           s->spec, W, T);
        break;
    case LR_WSD:
        if (W + s->decay_steps > T)
            return sx_fail(SX_ERR_ARG, "schedule '%s': warmup (%ld steps) and decay (%ld steps) overlap in a "
                           "run of %ld steps; shorten one of them", s->spec, W, s->decay_steps, T);
        break;
    default:
        if (W > T)
            return sx_fail(SX_ERR_ARG, "schedule '%s': warmup of %ld steps is longer than the run (%ld steps)",
                           s->spec, W, T);
    }
    return SX_OK;
}

sx_status lr_schedule_set_warmup(lr_schedule *s, const char *value) {
    long w = 0;
    sx_status st = parse_warmup(value, s->total_steps, &w);
    if (st != SX_OK) return st;
    long old = s->warmup_steps;
    s->warmup_steps = w;
    st = validate(s);
    if (st != SX_OK) s->warmup_steps = old;
    return st;
}

// Reads the schedule file s->path into s->px, s->py.
static sx_status read_points(lr_schedule *s) {
    const char *path = s->path;
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open schedule file '%s': %s", path, strerror(errno));
    line_reader lr;
    line_reader_init(&lr, f);
    sx_status st = SX_OK;
    s->n_points = 0;
    s->file_in_steps = false;
    while (st == SX_OK && line_reader_next(&lr)) {
        long lineno = (long)lr.no;
        char *save, *a = strtok_r(line_reader_uncomment(&lr), " \t\r\n", &save);
        if (!a) continue;
        char *b = strtok_r(NULL, " \t\r\n", &save), *extra = strtok_r(NULL, " \t\r\n", &save);
        double x, y;
        if (strcmp(a, "unit") == 0) {
            if (s->n_points > 0 || !b || extra || (strcmp(b, "steps") != 0 && strcmp(b, "fraction") != 0))
                st = sx_fail(SX_ERR_FORMAT, "%s:%ld: 'unit steps' or 'unit fraction' must come before the "
                             "first point", path, lineno);
            else s->file_in_steps = strcmp(b, "steps") == 0;
        } else if (!b || extra) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: expected 'POSITION MULTIPLIER' (two numbers)", path, lineno);
        } else if (!parse_double(a, &x)) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: malformed position '%s'", path, lineno, a);
        } else if (!parse_double(b, &y)) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: malformed multiplier '%s'", path, lineno, b);
        } else if (y < 0) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: multiplier %s is negative", path, lineno, b);
        } else if (s->file_in_steps ? (x < 0 || x != floor(x)) : (x < 0 || x > 1)) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: position %s must be %s", path, lineno, a,
                         s->file_in_steps ? "a whole step number >= 0" :
                                            "a fraction of the run in [0, 1] (write 'unit steps' first for steps)");
        } else if (s->n_points > 0 && x <= s->px[s->n_points - 1]) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: position %s does not increase (previous %g)", path, lineno, a,
                         s->px[s->n_points - 1]);
        } else if (s->n_points == LR_FILE_MAX_POINTS) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%ld: more than %d points", path, lineno, LR_FILE_MAX_POINTS);
        } else {
            s->px[s->n_points] = x;
            s->py[s->n_points] = y;
            s->n_points++;
        }
    }
    if (st == SX_OK && ferror(f)) st = sx_fail(SX_ERR_IO, "error reading schedule file '%s'", path);
    if (st == SX_OK && s->n_points == 0)
        st = sx_fail(SX_ERR_FORMAT, "%s: no points (expected lines 'POSITION MULTIPLIER')", path);
    line_reader_close(&lr);
    return st;
}

// Applies one KEY=VALUE option to s.
static sx_status apply_option(lr_schedule *s, char *opt) {
    char *eq = strchr(opt, '=');
    if (!eq) return sx_fail(SX_ERR_ARG, "schedule '%s': option '%s' is not KEY=VALUE", s->spec, opt);
    *eq = '\0';
    const char *key = opt, *val = eq + 1;
    bool decays = s->kind == LR_COSINE || s->kind == LR_LINEAR || s->kind == LR_WSD;
    double v;
    if (strcmp(key, "warmup") == 0) return parse_warmup(val, s->total_steps, &s->warmup_steps);
    if (strcmp(key, "min") == 0 && decays) {
        if (!parse_double(val, &v) || v < 0 || v > 1)
            return sx_fail(SX_ERR_ARG, "schedule '%s': min=%s must be a number in [0, 1]", s->spec, val);
        s->min_ratio = v;
        return SX_OK;
    }
    if (strcmp(key, "decay") == 0 && s->kind == LR_WSD) {
        if (!parse_double(val, &v) || v < 0 || v > 1)
            return sx_fail(SX_ERR_ARG, "schedule '%s': decay=%s must be a fraction in [0, 1]", s->spec, val);
        s->decay_fraction = v;
        return SX_OK;
    }
    if (strcmp(key, "shape") == 0 && s->kind == LR_WSD) {
        for (int k = 0; k < 3; k++)
            if (strcmp(val, shape_names[k]) == 0) {
                s->shape = (lr_decay_shape)k;
                return SX_OK;
            }
        if (strcmp(val, "1-sqrt") == 0) {
            s->shape = LR_SHAPE_SQRT;
            return SX_OK;
        }
        return sx_fail(SX_ERR_ARG, "schedule '%s': shape=%s (expected linear, cosine or sqrt)", s->spec, val);
    }
    const char *valid = s->kind == LR_WSD ? "warmup, min, decay, shape" : decays ? "warmup, min" : "warmup";
    return sx_fail(SX_ERR_ARG, "schedule '%s': unknown option '%s' for %s (valid: %s)", s->spec, key,
                   kind_names[s->kind], valid);
}

sx_status lr_schedule_parse(const char *spec, long total_steps, lr_schedule *out) {
    memset(out, 0, sizeof *out);
    if (total_steps < 1) return sx_fail(SX_ERR_ARG, "schedule needs total_steps >= 1 (got %ld)", total_steps);
    if (strlen(spec) >= LR_SPEC_MAX)
        return sx_fail(SX_ERR_ARG, "schedule spec is longer than %d characters", LR_SPEC_MAX - 1);
    strcpy(out->spec, spec);
    out->total_steps = total_steps;
    out->decay_fraction = 0.2;
    out->shape = LR_SHAPE_SQRT;
    char buf[LR_SPEC_MAX];
    strcpy(buf, spec);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    int kind = -1;
    for (int k = 0; k < 5; k++)
        if (strcmp(buf, kind_names[k]) == 0) kind = k;
    if (kind < 0)
        return sx_fail(SX_ERR_ARG, "unknown schedule '%s' (expected constant, cosine, linear, wsd or file:PATH)",
                       buf);
    out->kind = (lr_kind)kind;
    char *rest = colon ? colon + 1 : NULL;
    if (out->kind == LR_FILE) {
        if (!rest || !*rest || *rest == ',')
            return sx_fail(SX_ERR_ARG, "schedule '%s': give the file as file:PATH", spec);
        char *comma = strchr(rest, ',');
        if (comma) *comma = '\0';
        strcpy(out->path, rest);
        rest = comma ? comma + 1 : NULL;
    }
    if (colon && out->kind != LR_FILE && !*rest) rest = NULL;
    if (rest) {
        char *save, *opt;
        for (opt = strtok_r(rest, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
            sx_status st = apply_option(out, opt);
            if (st != SX_OK) return st;
        }
    }
    if (out->kind == LR_FILE) {
        sx_status st = read_points(out);
        if (st != SX_OK) return st;
    }
    return validate(out);
}

// ---- description ----

json_t *lr_schedule_to_json(const lr_schedule *s) {
    json_t *j = json_pack("{s:s, s:s, s:I, s:I}", "spec", s->spec, "kind", kind_names[s->kind], "total_steps",
                          (json_int_t)s->total_steps, "warmup_steps", (json_int_t)s->warmup_steps);
    if (!j) return NULL;
    if (s->kind == LR_COSINE || s->kind == LR_LINEAR || s->kind == LR_WSD)
        json_object_set_new(j, "min_ratio", json_real(s->min_ratio));
    if (s->kind == LR_WSD) {
        json_object_set_new(j, "decay_fraction", json_real(s->decay_fraction));
        json_object_set_new(j, "decay_steps", json_integer(s->decay_steps));
        json_object_set_new(j, "shape", json_string(shape_names[s->shape]));
    }
    if (s->kind == LR_FILE) {
        json_t *pts = json_array();
        for (size_t i = 0; i < s->n_points; i++)
            json_array_append_new(pts, json_pack("[f, f]", s->px[i], s->py[i]));
        json_object_set_new(j, "path", json_string(s->path));
        json_object_set_new(j, "unit", json_string(s->file_in_steps ? "steps" : "fraction"));
        json_object_set_new(j, "points", pts);
    }
    return j;
}

void lr_schedule_describe(const lr_schedule *s, char *buf, size_t size) {
    char warm[64] = "no warmup";
    if (s->warmup_steps > 0) snprintf(warm, sizeof warm, "warmup %ld steps", s->warmup_steps);
    const long T = s->total_steps;
    switch (s->kind) {
    case LR_CONSTANT: snprintf(buf, size, "constant: %s, %ld steps", warm, T); break;
    case LR_COSINE:
    case LR_LINEAR:
        snprintf(buf, size, "%s: %s, decay to %g at step %ld", kind_names[s->kind], warm, s->min_ratio, T);
        break;
    case LR_WSD:
        snprintf(buf, size, "wsd: %s, stable to step %ld, %s%s decay over %ld steps to %g", warm,
                 T - s->decay_steps, s->shape == LR_SHAPE_SQRT ? "1-" : "", shape_names[s->shape],
                 s->decay_steps, s->min_ratio);
        break;
    case LR_FILE:
        snprintf(buf, size, "file %s: %zu points (positions in %s), %s, %ld steps", s->path, s->n_points,
                 s->file_in_steps ? "steps" : "fractions of the run", warm, T);
        break;
    }
}
