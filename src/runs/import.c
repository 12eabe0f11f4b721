// import: external runs and curves tables -> a checked curve ladder -> a ladder directory. See import.h.
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/status.h"
#include "core/fsutil.h"
#include "core/lines.h"
#include "optim/schedule.h"
#include "runs/import.h"

#define LADDER_FORMAT "sextant-curve-ladder"

static const char *const field_names[IF_N_FIELDS] = {
    [IF_RUN] = "run_id", [IF_GROUP] = "group", [IF_N] = "n_params", [IF_N_NONEMBED] = "n_params_nonembed",
    [IF_TOKENS_PER_STEP] = "tokens_per_step", [IF_TOTAL_STEPS] = "total_steps", [IF_TOTAL_TOKENS] = "total_tokens",
    [IF_PEAK_LR] = "peak_lr", [IF_WARMUP] = "warmup", [IF_SCHEDULE] = "schedule", [IF_SEED] = "seed",
    [IF_FLOPS_PER_TOKEN] = "flops_per_token", [IF_ROLE] = "role", [IF_STEP] = "step", [IF_TOKENS] = "tokens", [IF_LR] = "lr"};

const char *import_field_name(import_field f) { return field_names[f]; }

// The flag that names a field's column is --FLAG-col, the one giving a value for every run --FLAG.
static const char *flag_of(import_field f) {
    static char names[IF_N_FIELDS][32];
    if (!names[f][0]) {
        snprintf(names[f], sizeof names[f], "%s", field_names[f]);
        for (char *c = names[f]; *c; c++)
            if (*c == '_') *c = '-';
    }
    return names[f];
}
const char *import_field_flag(import_field f) { return flag_of(f); }

// ---- tables: CSV or JSONL, every cell import reads kept as text ---------------------------------------------

// Only the columns import reads are kept (a trainer's export can have hundreds of metrics a row).
typedef struct {
    const char *path;
    size_t n_cols, n_rows;
    char **names;  // [n_cols]
    char **cells;  // [n_rows x n_cols]; NULL: absent (JSONL key missing, null)
    size_t *line;  // [n_rows] line number in the file (header = 1)
    size_t file_cols; // CSV: the header's columns, kept or not (0 before the header)
    int *slot;        // CSV: [file_cols] each header column's index among the kept ones, -1: not kept
} table;

static void table_free(table *t) {
    for (size_t i = 0; i < t->n_cols; i++) free(t->names[i]);
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++) free(t->cells[i]);
    free(t->names);
    free(t->cells);
    free(t->line);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

// Splits one CSV record (no embedded newlines) into fields: ',' separated, '"' quoting with "" as a quote.
// fields[*n] are malloc'd. SX_ERR_FORMAT on a malformed quote (no message: the caller names the line),
// SX_ERR_NOMEM when out of memory (recorded by sx_alloc).
static sx_status csv_fields(const char *s, char ***fields, size_t *n) {
    size_t cap = 16, len = strlen(s);
    *fields = sx_alloc(cap * sizeof **fields, "import fields");
    *n = 0;
    char *buf = sx_alloc(len + 1, "import buf");
    sx_status st = SX_ERR_NOMEM;
    if (!*fields || !buf) goto fail;
    const char *p = s;
    for (;;) {
        size_t k = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) { st = SX_ERR_FORMAT; goto fail; }
                if (*p == '"' && p[1] == '"') { buf[k++] = '"'; p += 2; }
                else if (*p == '"') { p++; break; }
                else buf[k++] = *p++;
            }
            if (*p && *p != ',') { st = SX_ERR_FORMAT; goto fail; }
        } else
            while (*p && *p != ',') buf[k++] = *p++;
        buf[k] = 0;
        if (*n == cap) {
            char **f = sx_realloc(*fields, (cap *= 2) * sizeof **fields, "import f");
            if (!f) goto fail;
            *fields = f;
        }
        if (!((*fields)[*n] = sx_strdup(buf, "import field"))) goto fail;
        ++*n;
        if (!*p) break;
        p++; // the ','
    }
    free(buf);
    return SX_OK;
fail:   // the fields copied so far go too (fuzzing found them leaking); the array is the caller's to free
    for (size_t i = 0; *fields && i < *n; i++) free((*fields)[i]);
    *n = 0;
    free(buf);
    return st;
}

static void strip_eol(char *s) { s[strcspn(s, "\r\n")] = 0; }

static int blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
    return 1;
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static sx_status table_add_row(table *t, size_t *cap, size_t lineno) {
    if (t->n_rows == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        char **c = sx_realloc(t->cells, *cap * (t->n_cols ? t->n_cols : 1) * sizeof *c, "import c");
        if (c) t->cells = c;
        size_t *l = sx_realloc(t->line, *cap * sizeof *l, "import l");
        if (l) t->line = l;
        if (!c || !l) return sx_fail(SX_ERR_NOMEM, "%s: out of memory", t->path);
    }
    for (size_t j = 0; j < t->n_cols; j++) t->cells[t->n_rows * t->n_cols + j] = NULL;
    t->line[t->n_rows++] = lineno;
    return SX_OK;
}

static int col_index(const table *t, const char *name) {
    for (size_t j = 0; j < t->n_cols; j++)
        if (strcmp(t->names[j], name) == 0) return (int)j;
    return -1;
}

// Adds a column (JSONL keys appear as they come); existing rows get absent cells.
static sx_status table_add_col(table *t, const char *name, size_t row_cap, int *idx) {
    char **names = sx_realloc(t->names, (t->n_cols + 1) * sizeof *names, "import names");
    if (!names) return sx_fail(SX_ERR_NOMEM, "%s: out of memory", t->path);
    t->names = names;
    char **cells = row_cap ? sx_alloc(row_cap * (t->n_cols + 1) * sizeof *cells, "import") : NULL;
    if (row_cap && !cells) return sx_fail(SX_ERR_NOMEM, "%s: out of memory", t->path);
    for (size_t i = 0; i < t->n_rows; i++) {
        memcpy(cells + i * (t->n_cols + 1), t->cells + i * t->n_cols, t->n_cols * sizeof *cells);
        cells[i * (t->n_cols + 1) + t->n_cols] = NULL;
    }
    free(t->cells);
    t->cells = cells;
    t->names[t->n_cols] = sx_strdup(name, "import t.names");
    *idx = (int)t->n_cols++;
    return SX_OK;
}

static char *json_cell(json_t *v) {
    char buf[64];
    if (json_is_string(v)) return sx_strdup(json_string_value(v), "import");
    if (json_is_integer(v)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
    else return NULL; // null: absent (the reader refuses booleans, arrays and objects)
    return sx_strdup(buf, "import");
}

// A column import reads: a field's (its canonical name, or the one --FIELD-col gives) or a loss column.
static bool wanted(const char *name, const import_options *o, const import_ladder *l) {
    for (int f = 0; f < IF_N_FIELDS; f++)
        if (!strcmp(name, o->col[f] && *o->col[f] ? o->col[f] : field_names[f])) return true;
    for (size_t k = 0; k < l->n_loss; k++)
        if (!strcmp(name, l->loss_names[k])) return true;
    return false;
}

// The CSV header's columns: the wanted ones become the table's.
static sx_status table_header(table *t, const char *line, size_t lineno, const import_options *o, const import_ladder *l) {
    char **names;
    size_t n;
    sx_status st = csv_fields(line, &names, &n);   // out of memory: said by sx_alloc
    if (st == SX_ERR_FORMAT) st = sx_fail(SX_ERR_FORMAT, "%s:%zu: malformed quoted header", t->path, lineno);
    else if (!st && n == 1 && strpbrk(line, "\t;"))
        st = sx_fail(SX_ERR_FORMAT, "%s:%zu: the header is one column holding %s: the curves and runs tables are "
                     "comma-separated CSV (or JSONL)", t->path, lineno, strchr(line, '\t') ? "tabs" : "semicolons");
    else if (!st && (!(t->slot = sx_alloc(n * sizeof *t->slot, "import slot")) ||
                     !(t->names = sx_alloc(n * sizeof *t->names, "import names"))))
        st = sx_fail(SX_ERR_NOMEM, "%s: out of memory", t->path);
    for (size_t j = 0; j < n; j++) {
        if (!st && wanted(names[j], o, l)) {
            t->slot[j] = (int)t->n_cols;
            t->names[t->n_cols++] = names[j];
        } else {
            if (!st) t->slot[j] = -1;
            free(names[j]);
        }
    }
    free(names);
    if (!st) t->file_cols = n;
    return st;
}

static sx_status table_read(const char *path, table *t, const import_options *opt, const import_ladder *l) {
    memset(t, 0, sizeof *t);
    t->path = path;
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s (%s)", path, strerror(errno));
    int jsonl = has_suffix(path, ".jsonl") || has_suffix(path, ".json");
    line_reader lr;
    line_reader_init(&lr, f);
    size_t row_cap = 0;
    sx_status st = SX_OK;
    while (!st && line_reader_next(&lr)) {
        char *line = lr.line;
        size_t lineno = lr.no;
        strip_eol(line);
        if (lineno == 1 && !strncmp(line, "\xEF\xBB\xBF", 3)) line += 3;   // the UTF-8 byte order mark of spreadsheet exports
        if (blank(line)) continue;
        if (jsonl) {
            json_error_t err;
            json_t *o = json_loads(line, 0, &err);
            if (!json_is_object(o)) {
                json_decref(o);
                st = sx_fail(SX_ERR_FORMAT, "%s:%zu: not a JSON object (%s)", path, lineno, o ? "not an object" : err.text);
                break;
            }
            st = table_add_row(t, &row_cap, lineno);
            const char *key;
            json_t *v;
            json_object_foreach(o, key, v) {
                if (st) break;
                if (!wanted(key, opt, l)) continue;
                if (json_is_boolean(v) || json_is_array(v) || json_is_object(v)) {
                    st = sx_fail(SX_ERR_FORMAT, "%s:%zu: key '%s': %s is not a value import reads (a number, a string or "
                                 "null)", path, lineno, key, json_is_boolean(v) ? "a boolean" : json_is_array(v) ? "an array" : "an object");
                    break;
                }
                int j = col_index(t, key);
                if (j < 0) st = table_add_col(t, key, row_cap, &j);
                if (!st) t->cells[(t->n_rows - 1) * t->n_cols + (size_t)j] = json_cell(v);
            }
            json_decref(o);
        } else if (t->file_cols == 0) {
            st = table_header(t, line, lineno, opt, l);
        } else {
            char **fields;
            size_t n;
            if ((st = csv_fields(line, &fields, &n))) {
                if (st == SX_ERR_FORMAT) st = sx_fail(SX_ERR_FORMAT, "%s:%zu: malformed quoted field", path, lineno);
                free(fields);
                break;
            }
            if (n != t->file_cols)
                st = sx_fail(SX_ERR_FORMAT, "%s:%zu: %zu fields, the header has %zu", path, lineno, n, t->file_cols);
            if (!st) st = table_add_row(t, &row_cap, lineno);
            for (size_t j = 0; j < n; j++) {
                if (!st && fields[j][0] && t->slot[j] >= 0) t->cells[(t->n_rows - 1) * t->n_cols + (size_t)t->slot[j]] = fields[j];
                else free(fields[j]);
            }
            free(fields);
        }
    }
    line_reader_close(&lr);
    if (!st && (jsonl ? t->n_rows == 0 : t->file_cols == 0)) st = sx_fail(SX_ERR_FORMAT, "%s: empty table", path);
    return st;
}

// ---- cells to values ---------------------------------------------------------------------------------

typedef struct {
    const table *t;
    int col[IF_N_FIELDS];   // column of each field in t, -1: none
} mapped;

static const char *cell(const table *t, size_t row, int col) {
    return col < 0 ? NULL : t->cells[row * t->n_cols + (size_t)col];
}

// A finite number from a cell; non-negative unless allow_negative. Errors name file, row and column.
static sx_status parse_num(const table *t, size_t row, int col, const char *text, int allow_negative, double *v) {
    char *end;
    errno = 0;
    *v = strtod(text, &end);
    const char *name = t->names[col];
    if (end == text || *end || errno == ERANGE)
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': '%s' is not a number", t->path, t->line[row], name, text);
    if (!isfinite(*v))
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': %s is not finite", t->path, t->line[row], name, text);
    if (!allow_negative && *v < 0)
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': %s is negative", t->path, t->line[row], name, text);
    return SX_OK;
}

// ---- run metadata --------------------------------------------------------------------------------------

static const import_field run_fields[] = {IF_GROUP, IF_N, IF_N_NONEMBED, IF_TOKENS_PER_STEP, IF_TOTAL_STEPS,
                                          IF_TOTAL_TOKENS, IF_PEAK_LR, IF_WARMUP, IF_SCHEDULE, IF_SEED,
                                          IF_FLOPS_PER_TOKEN, IF_ROLE};
#define N_RUN_FIELDS (sizeof run_fields / sizeof run_fields[0])

typedef struct {
    const char *text[IF_N_FIELDS]; // the run's value of each field as text (borrowed), NULL: none
    size_t row;                    // the run's first row (for messages)
    size_t field_row[IF_N_FIELDS]; // the row each text came from
    const table *from;
} run_meta;

static int find_run(const import_ladder *l, const char *id) {
    for (size_t i = 0; i < l->n_runs; i++)
        if (strcmp(l->runs[i].id, id) == 0) return (int)i;
    return -1;
}

static sx_status add_run(import_ladder *l, size_t *cap, const char *id, int *idx) {
    if (strlen(id) >= sizeof l->runs[0].id) return sx_fail(SX_ERR_FORMAT, "run id '%.40s...' is longer than 127 bytes", id);
    if (l->n_runs == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        import_run *r = sx_realloc(l->runs, *cap * sizeof *r, "import r");
        if (!r) return sx_fail(SX_ERR_NOMEM, "out of memory");
        l->runs = r;
    }
    import_run *r = &l->runs[l->n_runs];
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    *idx = (int)l->n_runs++;
    return SX_OK;
}

// Turns a run's field texts into values. m: where they came from (for messages).
static sx_status run_from_meta(import_run *r, run_meta *meta, const mapped *m, const import_options *o) {
    const table *t = meta->from;
    double v[IF_N_FIELDS];
    int have[IF_N_FIELDS] = {0};
    for (size_t k = 0; k < N_RUN_FIELDS; k++) {
        import_field f = run_fields[k];
        const char *txt = meta->text[f];
        if (!txt && o->value[f] && *o->value[f]) txt = o->value[f];
        if (!txt) continue;
        have[f] = 1;
        if (f == IF_GROUP || f == IF_SCHEDULE || f == IF_ROLE) continue;
        if (meta->text[f]) {
            sx_status st = parse_num(t, meta->field_row[f], m->col[f], txt, f == IF_SEED, &v[f]);
            if (st) return st;
        } else {
            char *end;
            v[f] = strtod(txt, &end);
            if (end == txt || *end || !isfinite(v[f]) || (v[f] < 0 && f != IF_SEED))
                return sx_fail(SX_ERR_ARG, "--%s: '%s' is not a finite non-negative number", flag_of(f), txt);
        }
    }
    const char *where = t ? t->path : "the flags";
    size_t line = t ? t->line[meta->row] : 0;
if (!have[IF_N] && !have[IF_N_NONEMBED])
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s' has no parameter count (map a column with --n-params-col or "
                       "--n-params-nonembed-col)", where, line, r->id);
    static const import_field required[] = {IF_TOKENS_PER_STEP, IF_PEAK_LR};
    for (size_t k = 0; k < 2; k++)
        if (!have[required[k]])
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s' has no %s (map a column with --%s-col or give --%s)", where, line,
                           r->id, field_names[required[k]], flag_of(required[k]), flag_of(required[k]));
    if (!have[IF_TOTAL_STEPS] && !have[IF_TOTAL_TOKENS])
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s' has no total_steps or total_tokens", where, line, r->id);
    r->n_params = have[IF_N] ? v[IF_N] : v[IF_N_NONEMBED];
    r->n_nonembed = have[IF_N_NONEMBED] ? v[IF_N_NONEMBED] : v[IF_N];
    r->n_given = (have[IF_N] ? IMPORT_N_WITH : 0) | (have[IF_N_NONEMBED] ? IMPORT_N_WITHOUT : 0);
    r->tokens_per_step = v[IF_TOKENS_PER_STEP];
    r->peak_lr = v[IF_PEAK_LR];
    if (!(r->n_params > 0) || !(r->n_nonembed > 0) || !(r->tokens_per_step > 0) || !(r->peak_lr > 0))
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': parameter counts, tokens_per_step and peak_lr must be positive", where,
                       line, r->id);
    double total = have[IF_TOTAL_STEPS] ? v[IF_TOTAL_STEPS] : v[IF_TOTAL_TOKENS] / r->tokens_per_step;
    r->total_steps = lround(total);
    if (r->total_steps < 1 || r->total_steps > (1L << 30) || (have[IF_TOTAL_STEPS] && total != (double)r->total_steps))
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': total steps %g is not a whole number in [1, 2^30]", where, line, r->id, total);
    double w = have[IF_WARMUP] ? v[IF_WARMUP] : 0;
    r->warmup_steps = w < 1 ? lround(w * (double)r->total_steps) : lround(w);
    if (have[IF_SEED] && !(v[IF_SEED] <= 0x1p53 && v[IF_SEED] == floor(v[IF_SEED])))   // before the cast: no overflow
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': seed %g is not a whole number in [0, 2^53]", where, line, r->id, v[IF_SEED]);
    r->seed = have[IF_SEED] ? (long)v[IF_SEED] : 0;
    r->flops_per_token = have[IF_FLOPS_PER_TOKEN] ? v[IF_FLOPS_PER_TOKEN] : NAN;
    const char *g = have[IF_GROUP] ? (meta->text[IF_GROUP] ? meta->text[IF_GROUP] : o->value[IF_GROUP]) : NULL;
    if (g) snprintf(r->group, sizeof r->group, "%s", g);
    else snprintf(r->group, sizeof r->group, "%.0f", r->n_params);
    const char *role = have[IF_ROLE] ? (meta->text[IF_ROLE] ? meta->text[IF_ROLE] : o->value[IF_ROLE]) : "fit";
    if (strcmp(role, "fit") && strcmp(role, "heldout"))
        return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': role '%s' is not fit or heldout", where, line, r->id, role);
    r->heldout = strcmp(role, "heldout") == 0;
    const char *s = have[IF_SCHEDULE] ? (meta->text[IF_SCHEDULE] ? meta->text[IF_SCHEDULE] : o->value[IF_SCHEDULE]) : "";
    if (strlen(s) >= sizeof r->schedule) return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': schedule string too long", where, line, r->id);
    snprintf(r->schedule, sizeof r->schedule, "%s", s);
    if (*s) {
        lr_schedule ls;
        if (lr_schedule_parse(s, r->total_steps, &ls))
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: run '%s': schedule '%s': %s", where, line, r->id, s, sx_last_error());
    }
    return SX_OK;
}

static void map_columns(mapped *m, const table *t, const import_options *o) {
    m->t = t;
    for (int f = 0; f < IF_N_FIELDS; f++) {
        const char *name = o->col[f] && *o->col[f] ? o->col[f] : field_names[f];
        m->col[f] = t ? col_index(t, name) : -1;
    }
}

// A column the user named explicitly must exist.
static sx_status check_named_columns(const mapped *m, const import_options *o, const import_field *fields, size_t n) {
    for (size_t k = 0; k < n; k++) {
        import_field f = fields[k];
        if (o->col[f] && *o->col[f] && m->col[f] < 0)
            return sx_fail(SX_ERR_FORMAT, "%s: no column '%s' (given by --%s-col)", m->t->path, o->col[f], flag_of(f));
    }
    return SX_OK;
}

// Whether two cells hold the same value: the same text, or the same finite number written two ways.
static bool same_value(const char *a, const char *b) {
    if (!strcmp(a, b)) return true;
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    return ea != a && eb != b && !*ea && !*eb && isfinite(x) && x == y;
}

// Collects each run's metadata from table t (runs table: one row per run; curves table: constant per run).
static sx_status collect_meta(const table *t, const mapped *m, int one_row_per_run, import_ladder *l, size_t *run_cap,
                              run_meta **metas) {
    if (m->col[IF_RUN] < 0) return sx_fail(SX_ERR_FORMAT, "%s: no column 'run_id' (map it with --run-id-col)", t->path);
    sx_status st = SX_OK;
    for (size_t i = 0; i < t->n_rows && !st; i++) {
        const char *id = cell(t, i, m->col[IF_RUN]);
        if (!id) return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': empty run id", t->path, t->line[i], t->names[m->col[IF_RUN]]);
        int r = find_run(l, id);
        if (r >= 0 && one_row_per_run)
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': run '%s' appears twice", t->path, t->line[i], t->names[m->col[IF_RUN]], id);
        if (r < 0) {
            size_t old_cap = *run_cap;
            if ((st = add_run(l, run_cap, id, &r))) return st;
            if (*run_cap != old_cap) {
                run_meta *mm = sx_realloc(*metas, *run_cap * sizeof *mm, "import mm");
                if (!mm) return sx_fail(SX_ERR_NOMEM, "out of memory");
                *metas = mm;
            }
            run_meta *me = &(*metas)[r];
            memset(me, 0, sizeof *me);
            me->row = i;
            me->from = t;
            for (size_t k = 0; k < N_RUN_FIELDS; k++) {
                me->text[run_fields[k]] = cell(t, i, m->col[run_fields[k]]);
                me->field_row[run_fields[k]] = i;
            }
            continue;
        }
        // A metadata cell left empty on some of a run's rows (a spreadsheet that fills it once) says nothing;
        // one written another way ("1e6", "1000000") is the same number.
        run_meta *me = &(*metas)[r];
        for (size_t k = 0; k < N_RUN_FIELDS; k++) {
            import_field f = run_fields[k];
            const char *a = me->text[f], *b = cell(t, i, m->col[f]);
            if (!b || (a && same_value(a, b))) continue;
            if (!a) {
                me->text[f] = b;
                me->field_row[f] = i;
                continue;
            }
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': run '%s' changes its %s ('%s' on line %zu)", t->path,
                           t->line[i], t->names[m->col[f]], id, field_names[f], a, t->line[me->field_row[f]]);
        }
    }
    return st;
}

// Splits "a,b,c" into the ladder's loss names.
static sx_status parse_loss_names(const char *spec, import_ladder *l) {
    if (!spec || !*spec) return sx_fail(SX_ERR_ARG, "name the loss column(s) with --loss-col (e.g. --loss-col val_loss)");
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof l->loss_names[0]) return sx_fail(SX_ERR_ARG, "--loss-col: bad column name in '%s'", spec);
        if (l->n_loss == IMPORT_MAX_LOSS) return sx_fail(SX_ERR_ARG, "--loss-col: at most %d loss columns", IMPORT_MAX_LOSS);
        snprintf(l->loss_names[l->n_loss], sizeof l->loss_names[0], "%.*s", (int)len, p);
        for (size_t k = 0; k < l->n_loss; k++)
            if (!strcmp(l->loss_names[k], l->loss_names[l->n_loss]))
                return sx_fail(SX_ERR_ARG, "--loss-col: '%s' is named twice", l->loss_names[k]);
        l->n_loss++;
        p += len + (p[len] == ',');
    }
    return SX_OK;
}

// Appends one curve row to run r.
static sx_status push_point(import_run *r, size_t *cap, size_t n_loss, long step, double tokens, double lr, const double *loss) {
    if (r->n_points == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        sx_status st = sx_grow_columns((void *[]){&r->step, &r->tokens, &r->lr, &r->loss},
                                       (size_t[]){sizeof *r->step, sizeof *r->tokens, sizeof *r->lr, n_loss * sizeof *r->loss},
                                       4, c, "an imported run's curve");
        if (st) return st;
        *cap = c;
    }
    r->step[r->n_points] = step;
    r->tokens[r->n_points] = tokens;
    r->lr[r->n_points] = lr;
    memcpy(r->loss + r->n_points * n_loss, loss, n_loss * sizeof *loss);
    r->n_points++;
    return SX_OK;
}

// Appends (step, lr) to run r's LR trace.
static sx_status push_trace(import_run *r, size_t *cap, long step, double lr) {
    if (r->n_trace == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        sx_status st = sx_grow_columns((void *[]){&r->trace_step, &r->trace_lr},
                                       (size_t[]){sizeof *r->trace_step, sizeof *r->trace_lr}, 2, c, "an imported run's LR trace");
        if (st) return st;
        *cap = c;
    }
    r->trace_step[r->n_trace] = step;
    r->trace_lr[r->n_trace++] = lr;
    return SX_OK;
}

// The last step of any row of run r so far (0: none).
static long last_step(const import_run *r) {
    long a = r->n_points ? r->step[r->n_points - 1] : 0, b = r->n_trace ? r->trace_step[r->n_trace - 1] : 0;
    return a > b ? a : b;
}

static sx_status read_curves(const table *t, const mapped *m, import_ladder *l) {
    static const import_field curve_fields[] = {IF_RUN, IF_STEP, IF_TOKENS, IF_LR};
    int loss_col[IMPORT_MAX_LOSS];
    for (size_t k = 0; k < l->n_loss; k++)
        if ((loss_col[k] = col_index(t, l->loss_names[k])) < 0)
            return sx_fail(SX_ERR_FORMAT, "%s: no column '%s' (given by --loss-col)", t->path, l->loss_names[k]);
    // Without a step column, the step is the tokens column over the run's tokens per step (an export that logs
    // tokens seen, not updates)
    int step_of_tokens = m->col[IF_STEP] < 0 && m->col[IF_TOKENS] >= 0, step_col = m->col[step_of_tokens ? IF_TOKENS : IF_STEP];
    for (size_t k = 0; k < 2; k++)
        if (m->col[curve_fields[k]] < 0 && !(k == 1 && step_of_tokens))
            return sx_fail(SX_ERR_FORMAT, "%s: no column '%s' (map it with --%s-col%s)", t->path, field_names[curve_fields[k]],
                           flag_of(curve_fields[k]), k == 1 ? ", or give a tokens column" : "");
    size_t *cap = sx_calloc_n(2 * (l->n_runs ? l->n_runs : 1), sizeof *cap, "import cap"); // points, then trace
    if (!cap) return sx_fail(SX_ERR_NOMEM, "out of memory");
    sx_status st = SX_OK;
    for (size_t i = 0; i < t->n_rows && !st; i++) {
        const char *id = cell(t, i, m->col[IF_RUN]);
        int ri = id ? find_run(l, id) : -1;
        if (ri < 0) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': run '%s' has no metadata (not in the runs table)", t->path,
                         t->line[i], t->names[m->col[IF_RUN]], id ? id : "");
            break;
        }
        import_run *r = &l->runs[ri];
        double step, tokens, lr = NAN, loss[IMPORT_MAX_LOSS];
        const char *txt;
        int filled = -1;   // a loss column with a value on this row, -1: none
        for (size_t k = 0; k < l->n_loss && filled < 0; k++)
            if (cell(t, i, loss_col[k])) filled = (int)k;
        if (filled < 0 && !cell(t, i, m->col[IF_LR])) {   // a step without an evaluation (a sparse export): nothing to read
            l->n_rows_skipped++;
            continue;
        }
#define NEED(field, out, neg)                                                                                       \
        if (!(txt = cell(t, i, m->col[field]))) {                                                                   \
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': empty", t->path, t->line[i], t->names[m->col[field]]); \
            break;                                                                                                  \
        }                                                                                                           \
        if ((st = parse_num(t, i, m->col[field], txt, neg, &out))) break;
        if (step_of_tokens) {
            NEED(IF_TOKENS, tokens, 0)
            double x = tokens / r->tokens_per_step;
            step = round(x);
            if (fabs(x - step) > 0.01) {   // a hundredth of a step: rounding in the export, not another batch
                st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': %.17g tokens is not a whole number of steps of %.17g tokens "
                             "(run '%s'; map the step column with --step-col)", t->path, t->line[i], t->names[m->col[IF_TOKENS]],
                             tokens, r->tokens_per_step, r->id);
                break;
            }
        } else {
            NEED(IF_STEP, step, 0)
        }
        if (step == 0) {   // an evaluation before any update (many trainers log one): the laws start at step 1
            l->n_rows_step0++;
            continue;
        }
        if (step != floor(step) || step < 1 || step > (double)r->total_steps) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': step %g is not a whole number in [1, %ld] (run '%s')", t->path,
                         t->line[i], t->names[step_col], step, r->total_steps, r->id);
            break;
        }
        if (m->col[IF_LR] >= 0 && (txt = cell(t, i, m->col[IF_LR])) && (st = parse_num(t, i, m->col[IF_LR], txt, 0, &lr))) break;
        int lr_only = filled < 0;   // an LR-only row: an lr and no loss at all (rows with neither were skipped above)
        if (lr_only) tokens = NAN;
        else if (m->col[IF_TOKENS] >= 0) { NEED(IF_TOKENS, tokens, 0) }
        else tokens = step * r->tokens_per_step;
        for (size_t k = 0; k < l->n_loss && !st && !lr_only; k++) {
            if (!(txt = cell(t, i, loss_col[k]))) {   // a row's loss columns are evaluated together
                st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': empty, while column '%s' has a value (losses logged at "
                             "different steps: import each into a ladder of its own, --loss-col %s, then --loss-col %s; "
                             "or fill the gap)", t->path, t->line[i], t->names[loss_col[k]], t->names[loss_col[filled]],
                             t->names[loss_col[filled]], t->names[loss_col[k]]);
                break;
            }
            if ((st = parse_num(t, i, loss_col[k], txt, 0, &loss[k]))) break;
            if (!(loss[k] > 0)) st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': loss %s is not positive", t->path, t->line[i], t->names[loss_col[k]], txt);
        }
#undef NEED
        if (st) break;
        long prev = last_step(r);
        if (prev > 0 && (long)step <= prev) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': step %ld %s step %ld of run '%s' (steps must increase within a run)",
                         t->path, t->line[i], t->names[step_col], (long)step, (long)step == prev ? "repeats" : "comes after",
                         prev, r->id);
            break;
        }
        if (!isnan(lr) && (st = push_trace(r, &cap[l->n_runs + (size_t)ri], (long)step, lr))) break;
        if (lr_only) continue;
        if (r->n_points > 0 && tokens < r->tokens[r->n_points - 1]) {
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: column '%s': tokens go down within run '%s'", t->path, t->line[i],
                         t->names[m->col[IF_TOKENS]], r->id);
            break;
        }
        st = push_point(r, &cap[ri], l->n_loss, (long)step, tokens, lr, loss);
    }
    free(cap);
    return st;
}

static void run_free(import_run *r) {
    free(r->step);
    free(r->tokens);
    free(r->lr);
    free(r->loss);
    free(r->trace_step);
    free(r->trace_lr);
}

void import_ladder_free(import_ladder *l) {
    for (size_t i = 0; i < l->n_runs; i++) run_free(&l->runs[i]);
    for (size_t i = 0; i < l->n_planned; i++) run_free(&l->planned[i]);
    free(l->runs);
    free(l->planned);
    memset(l, 0, sizeof *l);
}

// Keeps the runs with keep[i] (keep NULL: those not heldout), in order; frees the others.
static void keep_runs(import_ladder *l, const unsigned char *keep) {
    size_t kept = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        if (keep ? !keep[i] : l->runs[i].heldout) run_free(&l->runs[i]);
        else l->runs[kept++] = l->runs[i];
    }
    l->n_runs = kept;
}

void import_keep_runs(import_ladder *l, const unsigned char *keep) { keep_runs(l, keep); }

size_t import_drop_heldout(import_ladder *l) {
    size_t before = l->n_runs;
    keep_runs(l, NULL);
    return before - l->n_runs;
}

// Moves the runs without evaluations (role heldout: checked) to l->planned, keeping both in order.
static sx_status split_planned(import_ladder *l) {
    size_t n = 0, kept = 0;
    for (size_t i = 0; i < l->n_runs; i++) n += l->runs[i].n_points == 0;
    if (!n) return SX_OK;
    l->planned = sx_alloc(n * sizeof *l->planned, "import planned");
    if (!l->planned) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < l->n_runs; i++) {
        if (l->runs[i].n_points == 0) l->planned[l->n_planned++] = l->runs[i];
        else l->runs[kept++] = l->runs[i];
    }
    l->n_runs = kept;
    return SX_OK;
}

// The counts every run gave. A ladder whose runs share none (one only with embeddings, another only without)
// has no N that means the same for all of them.
static sx_status ladder_n_given(import_ladder *l) {
    l->n_given = IMPORT_N_BOTH;
    for (size_t i = 0; i < l->n_runs; i++) l->n_given &= l->runs[i].n_given;
    if (l->n_given || !l->n_runs) return SX_OK;
    const import_run *with = NULL, *without = NULL;
    for (size_t i = 0; i < l->n_runs; i++) {
        if (!(l->runs[i].n_given & IMPORT_N_WITHOUT) && !with) with = &l->runs[i];
        if (!(l->runs[i].n_given & IMPORT_N_WITH) && !without) without = &l->runs[i];
    }
    return sx_fail(SX_ERR_FORMAT, "no parameter count is given for every run: run '%s' has only n_params (with embeddings), "
                   "run '%s' only n_params_nonembed; give both for every run, or one count for all", with->id, without->id);
}

int import_gives_n(const import_ladder *l, int nonembed) {
    return (l->n_given & (nonembed ? IMPORT_N_WITHOUT : IMPORT_N_WITH)) != 0;
}

sx_status import_check_n_kind(const import_ladder *l, int nonembed) {
    if (import_gives_n(l, nonembed)) return SX_OK;
    return sx_fail(SX_ERR_ARG, "the ladder gives no parameter counts %s embeddings (only n_params%s): use --n %s",
                   nonembed ? "without" : "with", nonembed ? "" : "_nonembed", nonembed ? "embed" : "nonembed");
}

sx_status import_read_tables(const import_options *o, import_ladder *out) {
    memset(out, 0, sizeof *out);
    if (!o->curves_path || !*o->curves_path) return sx_fail(SX_ERR_ARG, "give the curves table (--curves FILE)");
    sx_status st = parse_loss_names(o->loss_cols, out);
    if (st) return st;
    table runs = {0}, curves = {0};
    int have_runs = o->runs_path && *o->runs_path;
    mapped mr = {0}, mc;
    run_meta *metas = NULL;
    size_t run_cap = 0;
    if (have_runs && !(st = table_read(o->runs_path, &runs, o, out))) {
        map_columns(&mr, &runs, o);
        if (!(st = check_named_columns(&mr, o, run_fields, N_RUN_FIELDS)))
            st = collect_meta(&runs, &mr, 1, out, &run_cap, &metas);
    }
    if (!st) st = table_read(o->curves_path, &curves, o, out);
    if (!st) {
        map_columns(&mc, &curves, o);
        static const import_field cf[] = {IF_RUN, IF_STEP, IF_TOKENS, IF_LR};
        st = check_named_columns(&mc, o, cf, 4);
        if (!st && !have_runs) {
            st = check_named_columns(&mc, o, run_fields, N_RUN_FIELDS);
            if (!st) st = collect_meta(&curves, &mc, 0, out, &run_cap, &metas);
        }
    }
    for (size_t i = 0; i < out->n_runs && !st; i++) st = run_from_meta(&out->runs[i], &metas[i], have_runs ? &mr : &mc, o);
    for (size_t k = 0; k < N_RUN_FIELDS && !st; k++) {   // a --FIELD value fills only runs whose tables lack it
        import_field f = run_fields[k];
        size_t took = 0;
        for (size_t i = 0; i < out->n_runs; i++) took += !metas[i].text[f];
        size_t used = strlen(out->unused_values);
        if (o->value[f] && *o->value[f] && !took && used < sizeof out->unused_values)
            snprintf(out->unused_values + used, sizeof out->unused_values - used, "%s--%s", used ? ", " : "", flag_of(f));
    }
    if (!st && out->n_runs == 0)   // a header alone would make a ladder that every command then reads as empty
        st = sx_fail(SX_ERR_FORMAT, "%s: no runs: the table has a header and no rows", have_runs ? o->runs_path : o->curves_path);
    if (!st) st = read_curves(&curves, &mc, out);
    int lr_given = !st && mc.col[IF_LR] >= 0;
    for (size_t i = 0; i < out->n_runs && !st; i++) {
        import_run *r = &out->runs[i];
        if (r->n_points == 0 && !r->heldout)   // a ladder's laws read trained runs; a planned one is a target
            st = sx_fail(SX_ERR_FORMAT, "%s: run '%s' has no %s in %s (a run not trained yet is a forecast's target: give "
                         "it role heldout, or describe it to forecast by flags)", have_runs ? o->runs_path : o->curves_path,
                         r->id, r->n_trace ? "evaluations (only LR rows)" : out->n_rows_skipped ? "rows with a loss value" : "rows",
                         o->curves_path);
        else if (!*r->schedule && (!lr_given || !r->n_trace))
            st = sx_fail(SX_ERR_FORMAT, "%s: run '%s' has neither a schedule nor an lr column", o->curves_path, r->id);
    }
    if (!st) st = split_planned(out);
    if (!st) st = ladder_n_given(out);
    free(metas);
    table_free(&runs);
    table_free(&curves);
    return st;
}

// ---- the ladder directory ------------------------------------------------------------------------------

// Writes s as one CSV field (quoted when it holds ',', '"' or a newline).
static void csv_put(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

// The shortest decimal that reads back as v exactly (0.003, not 0.0030000000000000001): the tables stay readable.
static void num_put(FILE *f, double v) {
    if (isnan(v)) return;
    if (v == floor(v) && fabs(v) < 1e18) { fprintf(f, "%.0f", v); return; }
    char text[32];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v) break;
    }
    fputs(text, f);
}

// Run i of the ladder's trained runs, then of its planned ones (i < n_runs + n_planned).
static const import_run *nth_run(const import_ladder *l, size_t i) {
    return i < l->n_runs ? &l->runs[i] : &l->planned[i - l->n_runs];
}

static sx_status write_runs_csv(const import_ladder *l, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return sx_fail(SX_ERR_IO, "cannot create %s (%s)", path, strerror(errno));
    fprintf(f, "run_id,group,n_params,n_params_nonembed,tokens_per_step,total_steps,peak_lr,warmup,schedule,seed,flops_per_token,role\n");
    for (size_t i = 0; i < l->n_runs + l->n_planned; i++) {
        const import_run *r = nth_run(l, i);
        csv_put(f, r->id); fputc(',', f);
        csv_put(f, r->group); fputc(',', f);
        num_put(f, r->n_given & IMPORT_N_WITH ? r->n_params : NAN); fputc(',', f);
        num_put(f, r->n_given & IMPORT_N_WITHOUT ? r->n_nonembed : NAN); fputc(',', f);
        num_put(f, r->tokens_per_step); fputc(',', f);
        fprintf(f, "%ld,", r->total_steps);
        num_put(f, r->peak_lr);
        fprintf(f, ",%ld,", r->warmup_steps);
        csv_put(f, r->schedule);
        fprintf(f, ",%ld,", r->seed);
        num_put(f, r->flops_per_token);
        fprintf(f, ",%s\n", r->heldout ? "heldout" : "fit");
    }
    int bad = ferror(f) | (fclose(f) != 0);
    return bad ? sx_fail(SX_ERR_IO, "%s: write failed", path) : SX_OK;
}

static sx_status write_curves_csv(const import_ladder *l, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return sx_fail(SX_ERR_IO, "cannot create %s (%s)", path, strerror(errno));
    fprintf(f, "run_id,step,tokens,lr");
    for (size_t k = 0; k < l->n_loss; k++) { fputc(',', f); csv_put(f, l->loss_names[k]); }
    fputc('\n', f);
    for (size_t i = 0; i < l->n_runs + l->n_planned; i++) {
        const import_run *r = nth_run(l, i);
        size_t q = 0;   // the LR trace, merged in step order: a trace row at an evaluation's step is that evaluation
        for (size_t p = 0; p <= r->n_points; p++) {
            long until = p < r->n_points ? r->step[p] : LONG_MAX;
            for (; q < r->n_trace && r->trace_step[q] <= until; q++) {
                if (r->trace_step[q] == until) continue;
                csv_put(f, r->id);
                fprintf(f, ",%ld,,", r->trace_step[q]);
                num_put(f, r->trace_lr[q]);
                for (size_t k = 0; k < l->n_loss; k++) fputc(',', f);
                fputc('\n', f);
            }
            if (p == r->n_points) break;
            csv_put(f, r->id);
            fprintf(f, ",%ld,", r->step[p]);
            num_put(f, r->tokens[p]);
            fputc(',', f);
            num_put(f, r->lr[p]);
            for (size_t k = 0; k < l->n_loss; k++) { fputc(',', f); num_put(f, r->loss[p * l->n_loss + k]); }
            fputc('\n', f);
        }
    }
    int bad = ferror(f) | (fclose(f) != 0);
    return bad ? sx_fail(SX_ERR_IO, "%s: write failed", path) : SX_OK;
}

static void remove_tree_files(const char *dir) {
    static const char *files[] = {"runs.csv", "curves.csv", "ladder.json"};
    char p[4200];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

sx_status import_write_dir(const import_ladder *l, const char *out, const char *source) {
    char dir[4000];   // without trailing slashes: "L/" would put the temporary inside the directory it becomes
    if (snprintf(dir, sizeof dir, "%s", out) >= (int)sizeof dir) return sx_fail(SX_ERR_ARG, "path too long: %s", out);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--) dir[n - 1] = 0;
    struct stat sb;
    if (stat(dir, &sb) == 0) return sx_fail(SX_ERR_ARG, "%s already exists (remove it or choose another --out)", dir);
    char tmp[4096], p_runs[4200], p_curves[4200], p_json[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", dir, (long)getpid());
    remove_tree_files(tmp);
    sx_status st = fs_mkdir_p(tmp);
    if (st) return st;
    snprintf(p_runs, sizeof p_runs, "%s/runs.csv", tmp);
    snprintf(p_curves, sizeof p_curves, "%s/curves.csv", tmp);
    snprintf(p_json, sizeof p_json, "%s/ladder.json", tmp);
    char h_runs[65], h_curves[65];
    if (!(st = write_runs_csv(l, p_runs)) && !(st = write_curves_csv(l, p_curves)) && !(st = fs_sha256_file(p_runs, h_runs)))
        st = fs_sha256_file(p_curves, h_curves);
    if (!st) {
        int given = 1;
        for (size_t i = 0; i < l->n_runs; i++) given &= !isnan(l->runs[i].flops_per_token);
        json_t *names = json_array();
        for (size_t k = 0; k < l->n_loss; k++) json_array_append_new(names, json_string(l->loss_names[k]));
        json_t *doc = json_pack("{s:s, s:i, s:o, s:s, s:s, s:I, s:{s:s, s:s}}", "format", LADDER_FORMAT, "version",
                                IMPORT_VERSION, "loss_columns", names, "flops", given ? "given" : "6ND", "source",
                                source ? source : "", "runs", (json_int_t)l->n_runs, "sha256", "runs.csv", h_runs,
                                "curves.csv", h_curves);
        if (!doc) st = sx_fail(SX_ERR_NOMEM, "cannot build ladder.json");
        else st = fs_write_json(p_json, doc, JSON_INDENT(1) | JSON_SORT_KEYS);
        json_decref(doc);
    }
    if (!st && rename(tmp, dir) != 0) st = sx_fail(SX_ERR_IO, "cannot rename %s to %s (%s)", tmp, dir, strerror(errno));
    if (st) remove_tree_files(tmp);
    return st;
}

int import_is_ladder_dir(const char *dir) {
    char p[4200];
    snprintf(p, sizeof p, "%s/ladder.json", dir);
    json_t *doc = json_load_file(p, 0, NULL);
    const char *fmt = json_string_value(json_object_get(doc, "format"));
    int yes = fmt && strcmp(fmt, LADDER_FORMAT) == 0;
    json_decref(doc);
    return yes;
}

sx_status import_read_dir(const char *dir, import_ladder *out) {
    memset(out, 0, sizeof *out);
    char p_json[4200], p_runs[4200], p_curves[4200];
    snprintf(p_json, sizeof p_json, "%s/ladder.json", dir);
    snprintf(p_runs, sizeof p_runs, "%s/runs.csv", dir);
    snprintf(p_curves, sizeof p_curves, "%s/curves.csv", dir);
    json_error_t err;
    json_t *doc = json_load_file(p_json, 0, &err);
    if (!doc) return access(p_json, F_OK) ? sx_fail(SX_ERR_IO, "%s: not a ladder directory (no ladder.json; see `sextant import`)", dir)
                                          : sx_fail(SX_ERR_FORMAT, "%s:%d: %s", p_json, err.line, err.text);
    const char *fmt = json_string_value(json_object_get(doc, "format"));
    json_int_t ver = json_integer_value(json_object_get(doc, "version"));
    sx_status st = SX_OK;
    if (!fmt || strcmp(fmt, LADDER_FORMAT)) st = sx_fail(SX_ERR_FORMAT, "%s: \"format\" is not \"%s\"", p_json, LADDER_FORMAT);
    else if (ver != IMPORT_VERSION)
        st = sx_fail(SX_ERR_FORMAT, "%s: version %lld, this sextant reads version %d", p_json, (long long)ver, IMPORT_VERSION);
    const char *files[2] = {"runs.csv", "curves.csv"}, *paths[2] = {p_runs, p_curves};
    for (int i = 0; i < 2 && !st; i++) {
        char h[65];
        const char *want = json_string_value(json_object_get(json_object_get(doc, "sha256"), files[i]));
        if (!(st = fs_sha256_file(paths[i], h)) && (!want || strcmp(want, h)))
            st = sx_fail(SX_ERR_FORMAT, "%s: sha256 does not match ladder.json (edited after import?)", paths[i]);
    }
    char losses[IMPORT_MAX_LOSS * 65] = "";
    json_t *names = json_object_get(doc, "loss_columns");
    for (size_t k = 0; k < json_array_size(names) && !st; k++) {
        const char *s = json_string_value(json_array_get(names, k));
        if (!s) st = sx_fail(SX_ERR_FORMAT, "%s: bad \"loss_columns\"", p_json);
        else {
            if (k) strcat(losses, ",");
            strncat(losses, s, 64);
        }
    }
    json_decref(doc);
    if (st) return st;
    import_options o = {.runs_path = p_runs, .curves_path = p_curves, .loss_cols = losses};
    return import_read_tables(&o, out);
}

static int cmp_long_asc(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

sx_status import_eval_interval(const import_ladder *l, long *every) {
    *every = 0;
    size_t n = 0;
    for (size_t i = 0; i < l->n_runs; i++) n += l->runs[i].n_points > 1 ? l->runs[i].n_points - 1 : 0;
    if (!n) return SX_OK;
    long *gap = sx_alloc(n * sizeof *gap, "import gaps");
    if (!gap) return sx_fail(SX_ERR_NOMEM, "out of memory counting the ladder's evaluation intervals");
    size_t k = 0;
    for (size_t i = 0; i < l->n_runs; i++)
        for (size_t q = 1; q < l->runs[i].n_points; q++) gap[k++] = l->runs[i].step[q] - l->runs[i].step[q - 1];
    qsort(gap, n, sizeof *gap, cmp_long_asc);
    size_t best_count = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && gap[b] == gap[a]; b++) {}
        if (b - a > best_count) { best_count = b - a; *every = gap[a]; }
    }
    free(gap);
    if (2 * best_count < n) *every = 0;
    return SX_OK;
}

int import_loss_index(const import_ladder *l, const char *name) {
    if (!name || !*name) return l->n_loss ? 0 : -1;
    for (size_t k = 0; k < l->n_loss; k++)
        if (strcmp(l->loss_names[k], name) == 0) return (int)k;
    return -1;
}

sx_status import_run_lr(const import_run *r, double *lr) {
    long n = r->total_steps;
    if (*r->schedule && r->warmup_steps >= n) {   // warmed up the whole run, as a trainer does: the decay never starts
        for (long i = 0; i < n; i++) lr[i] = r->peak_lr * (i + 1 < r->warmup_steps ? (double)(i + 1) / (double)r->warmup_steps : 1.0);
        return SX_OK;
    }
    if (*r->schedule) {
        lr_schedule s;
        sx_status st = lr_schedule_parse(r->schedule, n, &s);
        char w[32];
        snprintf(w, sizeof w, "%ld", r->warmup_steps);
        if (!st && r->warmup_steps > 0) st = lr_schedule_set_warmup(&s, w);
        if (st) return st;
        lr_schedule_fill(&s, lr, n);
        for (long i = 0; i < n; i++) lr[i] *= r->peak_lr;
        return SX_OK;
    }
    // piecewise linear through the LR trace, held outside it
    long prev_s = -1;
    double prev_v = NAN;
    size_t p = 0;
    for (long i = 0; i < n; i++) {
        long step = i + 1;
        while (p < r->n_trace && r->trace_step[p] < step) {
            prev_s = r->trace_step[p];
            prev_v = r->trace_lr[p];
            p++;
        }
        double next_v = p < r->n_trace ? r->trace_lr[p] : NAN;
        long next_s = p < r->n_trace ? r->trace_step[p] : -1;
        if (isnan(prev_v)) lr[i] = next_v;
        else if (isnan(next_v)) lr[i] = prev_v;
        else lr[i] = prev_v + (next_v - prev_v) * (double)(step - prev_s) / (double)(next_s - prev_s);
    }
    return SX_OK;
}

double import_run_flops(const import_run *r, double tokens) {
    return (isnan(r->flops_per_token) ? 6 * r->n_params : r->flops_per_token) * tokens;
}
