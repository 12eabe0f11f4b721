#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/flags.h"

// Choice i of a FLAG_CHOICE flag: its length, and where it starts in *word (NULL: not wanted); 0 past the last.
static size_t choice_at(const flag_def *d, int i, const char **word) {
    const char *s = ((const flag_choice *)d->target)->words;
    for (; i > 0 && s; i--) s = strchr(s, '|') ? strchr(s, '|') + 1 : NULL;
    if (!s) return 0;
    if (word) *word = s;
    return strcspn(s, "|");
}

static bool choice_is(const flag_def *d, int i, const char *text) {
    const char *w = "";
    size_t len = choice_at(d, i, &w);
    return strlen(text) == len && !strncmp(w, text, len);
}

// "--NAME: 'WORD' is not a, b or c".
static sx_status refuse_choice(const flag_def *d, const char *word) {
    char list[256] = "";
    size_t used = 0;
    int n = 0;
    while (choice_at(d, n, NULL)) n++;
    for (int i = 0; i < n && used < sizeof list; i++) {
        const char *w = "";
        size_t len = choice_at(d, i, &w);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                                 (int)len, w);
    }
    return sx_fail(SX_ERR_ARG, "--%s: '%s' is not %s", d->name, word, list);
}

static sx_status set_value(const flag_def *d, const char *text) {
    char *end;
    switch (d->type) {
    case FLAG_STR:
        *(const char **)d->target = text ? text : "";
        return SX_OK;
    case FLAG_INT: {
        errno = 0;
        long v = strtol(text ? text : "0", &end, 10);
        if (errno || end == text || *end)
            return sx_fail(SX_ERR_ARG, "--%s: '%s' is not an integer", d->name, text);
        *(long *)d->target = v;
        return SX_OK;
    }
    case FLAG_DOUBLE:
    case FLAG_FLOAT: {
        errno = 0;
        double v = strtod(text ? text : "0", &end);
        if (errno || end == text || *end || !isfinite(v) || (d->type == FLAG_FLOAT && !isfinite((float)v)))
            return sx_fail(SX_ERR_ARG, "--%s: '%s' is not a finite number", d->name, text);
        if (d->type == FLAG_FLOAT) *(float *)d->target = (float)v;
        else *(double *)d->target = v;
        return SX_OK;
    }
    case FLAG_BOOL:
        if (!text || !strcmp(text, "false") || !strcmp(text, "0")) *(bool *)d->target = false;
        else if (!strcmp(text, "true") || !strcmp(text, "1")) *(bool *)d->target = true;
        else return sx_fail(SX_ERR_ARG, "--%s: '%s' is not true or false", d->name, text);
        return SX_OK;
    case FLAG_CHOICE: {
        const char *word = text ? text : "";
        for (int i = 0; choice_at(d, i, NULL); i++)
            if (choice_is(d, i, word)) {
                *((const flag_choice *)d->target)->index = i;
                return SX_OK;
            }
        return refuse_choice(d, word);
    }
    }
    return sx_fail(SX_ERR_ARG, "--%s: flag type %d has no parser (add a case to set_value)", d->name, (int)d->type);
}

bool flags_near(const char *word, size_t len, const char *name) {
    size_t m = strlen(name);
    if (len > 63 || m > 63 || (len > m ? len - m : m - len) > 2) return false;
    size_t d[64][64];   // optimal string alignment distance between word[0..i) and name[0..j)
    for (size_t i = 0; i <= len; i++)
        for (size_t j = 0; j <= m; j++) {
            if (!i || !j) { d[i][j] = i + j; continue; }
            size_t best = d[i - 1][j - 1] + (word[i - 1] != name[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && word[i - 1] == name[j - 2] && word[i - 2] == name[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[len][m] <= 2 && 2 * d[len][m] < len;
}

static const flag_def *find(const flag_def *defs, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(defs[i].name) == len && !strncmp(defs[i].name, name, len)) return &defs[i];
    return NULL;
}

sx_status flags_set_defaults(const flag_def *defs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sx_status s = set_value(&defs[i], defs[i].defval);
        if (s) return s;
    }
    return SX_OK;
}

sx_status flags_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                      int *npos, bool *help, bool *given) {
    *npos = 0;
    *help = false;
    sx_status s = flags_set_defaults(defs, n);
    return s ? s : flags_parse_args(defs, n, argc, argv, pos, max_pos, npos, help, given);
}

sx_status flags_parse_args(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                           int *npos, bool *help, bool *given) {
    *npos = 0;
    *help = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { *help = true; continue; }
        if (strncmp(a, "--", 2) || !a[2]) {
            if (*npos >= max_pos) return sx_fail(SX_ERR_ARG, "unexpected argument '%s' (see --help)", a);
            pos[(*npos)++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const flag_def *d = find(defs, n, name, len);
        if (!d && !eq && !strncmp(name, "no-", 3) && (d = find(defs, n, name + 3, len - 3)) && d->type == FLAG_BOOL) {
            *(bool *)d->target = false;
            if (given) given[d - defs] = true;
            continue;
        }
        if (!d) {
            for (size_t k = 0; k < n; k++)
                if (flags_near(name, len, defs[k].name))
                    return sx_fail(SX_ERR_ARG, "unknown flag --%.*s (did you mean --%s? see --help)", (int)len, name,
                                   defs[k].name);
            return sx_fail(SX_ERR_ARG, "unknown flag --%.*s (see --help)", (int)len, name);
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val && d->type == FLAG_BOOL) val = "true";
        else if (!val) {
            if (i + 1 >= argc) return sx_fail(SX_ERR_ARG, "--%s needs a value", d->name);
            val = argv[++i];
        }
        sx_status s = set_value(d, val);
        if (s) return s;
        if (given) given[d - defs] = true;
    }
    return SX_OK;
}

bool flags_start(const flags_command *c, const flag_def *defs, size_t n, int argc, char **argv, flags_args *a) {
    SX_CHECK(c->max_pos <= FLAGS_MAX_POS && c->min_pos <= c->max_pos, "a command takes 0..FLAGS_MAX_POS positional arguments");
    SX_CHECK(n <= FLAGS_MAX_DEFS, "raise FLAGS_MAX_DEFS");
    bool help;
    a->npos = 0;
    a->defs = defs;
    a->ndefs = n;
    memset(a->given, 0, sizeof a->given);
    a->st = flags_parse(defs, n, argc, argv, a->pos, c->max_pos, &a->npos, &help, a->given);
    if (help) flags_usage(stdout, c->synopsis, c->about, defs, n);
    else if (!a->st && a->npos < c->min_pos) a->st = sx_fail(SX_ERR_ARG, "%s", c->few_pos);
    return help;
}

// The row of the command's table named by name[0..len): a name outside the table is the command's bug.
static size_t row_of(const flags_args *a, const char *name, size_t len) {
    const flag_def *d = find(a->defs, a->ndefs, name, len);
    SX_CHECK(d != NULL, "flags_given, flags_first_given and flags_only name flags of the command's table");
    return (size_t)(d - a->defs);
}

bool flags_given(const flags_args *a, const char *name) { return a->given[row_of(a, name, strlen(name))]; }

// The next name of a comma-separated list: its length, *s moved past it and its comma.
static size_t next_name(const char **s, const char **name) {
    size_t len = strcspn(*s, ",");
    *name = *s;
    *s += len + ((*s)[len] == ',');
    return len;
}

const char *flags_first_given(const flags_args *a, const char *names) {
    const char *name;
    for (const char *s = names; *s;) {
        size_t len = next_name(&s, &name);   // before row_of reads name: argument order is unspecified
        size_t i = row_of(a, name, len);
        if (a->given[i]) return a->defs[i].name;
    }
    return NULL;
}

sx_status flags_only(const flags_args *a, const char *allowed, const char *what) {
    bool in[FLAGS_MAX_DEFS] = {0};
    char list[1024] = "no flags";
    size_t used = 0, count = 0;
    const char *name;
    for (const char *s = allowed; *s; count++) {
        size_t len = next_name(&s, &name);
        in[row_of(a, name, len)] = true;
    }
    size_t k = 0;
    for (const char *s = allowed; *s && used < sizeof list; k++) {   // list: "--a, --b or --c"
        size_t len = next_name(&s, &name);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s--%.*s", k == 0 ? "" : k == count - 1 ? " or " : ", ",
                                 (int)len, name);
    }
    for (size_t i = 0; i < a->ndefs; i++)
        if (a->given[i] && !in[i]) return sx_fail(SX_ERR_ARG, "--%s does not apply to %s (it takes %s)", a->defs[i].name, what, list);
    return SX_OK;
}

void flags_usage(FILE *out, const char *synopsis, const char *about, const flag_def *defs, size_t n) {
    fprintf(out, "usage: sextant %s\n", synopsis);
    if (about) fprintf(out, "\n%s\n", about);
    fprintf(out, "\nflags:\n");
    static const char *kinds[] = {"TEXT", "INT", "NUM", "", "NUM", "TEXT"};
    for (size_t i = 0; i < n; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s %s", defs[i].name, kinds[defs[i].type]);
        fprintf(out, "  %-26s %s", left, defs[i].help);
        if (defs[i].defval && *defs[i].defval) fprintf(out, " [%s]", defs[i].defval);
        fputc('\n', out);
    }
}

double float_as_typed(float f) {
    char text[32];
    for (int digits = 1; digits < 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)f);
        if ((float)strtod(text, NULL) == f) return strtod(text, NULL);
    }
    return (double)f;
}

// The value of d as text that set_value reads back exactly.
static void format_value(const flag_def *d, char *text, size_t size) {
    switch (d->type) {
    case FLAG_STR: snprintf(text, size, "%s", *(const char **)d->target); break;   // flags_to_argv takes it whole
    case FLAG_INT: snprintf(text, size, "%ld", *(long *)d->target); break;
    case FLAG_DOUBLE: snprintf(text, size, "%.17g", *(double *)d->target); break;
    case FLAG_FLOAT: snprintf(text, size, "%.9g", (double)*(float *)d->target); break;
    case FLAG_BOOL: snprintf(text, size, "%s", *(bool *)d->target ? "true" : "false"); break;
    case FLAG_CHOICE: {
        const char *w = "";
        size_t len = choice_at(d, *((const flag_choice *)d->target)->index, &w);
        snprintf(text, size, "%.*s", (int)len, w);
        break;
    }
    }
}

sx_status flags_to_argv(const flag_def *defs, size_t n, char *buf, size_t size, char **argv, int *argc, int max) {
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (*argc + 3 > max) return sx_fail(SX_ERR_ARG, "too many arguments for the command line");
        char value[64];
        const char *text = value;
        if (defs[i].type == FLAG_STR) text = *(const char **)defs[i].target ? *(const char **)defs[i].target : "";
        else format_value(&defs[i], value, sizeof value);
        // "--name VALUE" (flags_parse_args takes the next argument whole, even one starting with "--");
        // a boolean as "--name" or "--no-name".
        bool is_bool = defs[i].type == FLAG_BOOL, on = is_bool && *(bool *)defs[i].target;
        for (int part = 0; part < (is_bool ? 1 : 2); part++) {
            int len = part ? snprintf(buf + used, size - used, "%s", text)
                           : snprintf(buf + used, size - used, "--%s%s", is_bool && !on ? "no-" : "", defs[i].name);
            if (len < 0 || (size_t)len >= size - used) return sx_fail(SX_ERR_ARG, "the command line is too long");
            argv[(*argc)++] = buf + used;
            used += (size_t)len + 1;
        }
    }
    argv[*argc] = NULL;
    return SX_OK;
}

json_t *flags_to_json(const flag_def *defs, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        const flag_def *d = &defs[i];
        json_t *v = NULL;
        switch (d->type) {
        case FLAG_STR: v = json_string(*(const char **)d->target); break;
        case FLAG_INT: v = json_integer(*(long *)d->target); break;
        case FLAG_DOUBLE: v = json_real(*(double *)d->target); break;
        case FLAG_BOOL: v = json_boolean(*(bool *)d->target); break;
        case FLAG_FLOAT: v = json_real(float_as_typed(*(float *)d->target)); break;
        case FLAG_CHOICE: {
            char word[64];
            format_value(d, word, sizeof word);
            v = json_string(word);
            break;
        }
        }
        json_object_set_new(o, d->name, v);
    }
    return o;
}
