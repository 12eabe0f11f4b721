// sextant report RUNDIR|LADDER: one self-contained HTML page for a run or a ladder (report/htmlreport.h),
// written beside it (RUNDIR/report.html, <ladder runs>/report.html) unless --out says where.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "report/htmlreport.h"
#include "runs/rundir.h"
#include "scale/forecast.h"
#include "scale/ladder_seeds.h"

static bool is_file(const char *path) {
    struct stat sb;
    return path && *path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

// Loads path as JSON into *out; a missing optional file (required == false) leaves *out NULL. A sealed
// document (fit.json, forecast.json: sealed == true) must still match its sha256, so that the page never
// shows numbers that were edited after they were preregistered.
static sx_status load(const char *path, bool required, bool sealed, json_t **out) {
    *out = NULL;
    if (!required && !is_file(path)) return SX_OK;
    json_error_t err;
    if (!(*out = json_load_file(path, 0, &err)))
        return sx_fail(SX_ERR_FORMAT, "%s: %s%s", path, err.text, err.line > 0 ? "" : " (give an existing file)");
    return sealed ? forecast_verify_hash(*out, path) : SX_OK;
}

int cmd_report(int argc, char **argv) {
    static const flags_command cmd = {
        "report RUNDIR|LADDER [--out report.html]",
        "Writes one self-contained HTML page (plots inline, no network) for a training run (its curves,\n"
        "the check against its forecast, its configuration) or a ladder spec (its runs, fitted laws with\n"
        "intervals, rung curves, the spec).",
        1, 1, "give a run directory or a ladder spec: sextant report RUNDIR|LADDER"};
    const char *out, *runs, *fit_path, *fc_path;
    const flag_def flags[] = {
        {"out", FLAG_STR, &out, "", "the HTML file (default: report.html in the run or the ladder's runs directory)"},
        {"runs", FLAG_STR, &runs, "", "LADDER: its runs directory (default runs/<name>)"},
        {"fit", FLAG_STR, &fit_path, "", "fit.json (default: <runs>/fit.json; for a run, runs/<forecast's ladder>/fit.json)"},
        {"forecast", FLAG_STR, &fc_path, "", "RUNDIR: the forecast to check it against (default: the one it trained with)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (st) return cli_report("report", st);
    char dir[1100] = "", path[1200], fit_default[1200];
    json_t *fit = NULL, *fc = NULL;
    struct stat sb;
    bool is_run = stat(a.pos[0], &sb) == 0 && S_ISDIR(sb.st_mode);
    ladder_spec spec;
    if (is_run && *runs) st = sx_fail(SX_ERR_ARG, "--runs names a ladder spec's runs directory: %s is a run", a.pos[0]);
    if (!is_run && *fc_path) st = sx_fail(SX_ERR_ARG, "--forecast is checked against a run: %s is not a run directory", a.pos[0]);
    if (!st && is_run) {
        snprintf(dir, sizeof dir, "%s", a.pos[0]);
        json_t *config = NULL;
        snprintf(path, sizeof path, "%s/config.json", dir);
        char ladder_json[1200];
        snprintf(ladder_json, sizeof ladder_json, "%s/ladder.json", dir);
        if (!is_file(path))
            st = is_file(ladder_json)
                     ? sx_fail(SX_ERR_ARG, "%s is a curve ladder (sextant import): report reads a run directory or a "
                               "ladder spec; for a curve ladder, `sextant backtest %s --plot backtest.svg` draws its "
                               "forecasts", dir, dir)
                     : sx_fail(SX_ERR_IO, "%s: no config.json: not a run directory written by `sextant train`", dir);
        if (!st) st = load(path, true, false, &config);
        bool recorded = !*fc_path;
        if (!st && recorded) fc_path = json_string_value(json_object_get(json_object_get(config, "flags"), "forecast"));
        if (!st && recorded && fc_path && *fc_path) st = rundir_recorded_path_check(fc_path, "forecast", "--forecast");
        if (!st && fc_path && *fc_path) st = load(fc_path, true, true, &fc);
        const char *ladder = json_string_value(json_object_get(json_object_get(fc, "method"), "ladder"));
        snprintf(fit_default, sizeof fit_default, "runs/%s/fit.json", ladder ? ladder : "");
        if (!st) st = *fit_path ? load(fit_path, true, true, &fit) : ladder ? load(fit_default, false, true, &fit) : SX_OK;
        json_decref(config);
    } else if (!st && is_file(a.pos[0])) {
        st = ladder_open(a.pos[0], runs, &spec, dir, sizeof dir);
        snprintf(fit_default, sizeof fit_default, "%s/fit.json", dir);
        if (!st) st = load(*fit_path ? fit_path : fit_default, *fit_path != 0, true, &fit);
    } else if (!st)
        st = sx_fail(SX_ERR_IO, "%s: no such run directory or ladder spec", a.pos[0]);
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/report.html", dir);
    char parent[1200];
    snprintf(parent, sizeof parent, "%s", path);
    if (!st && strrchr(parent, '/')) {   // a ladder not run yet has no runs directory: its page still says so
        *strrchr(parent, '/') = 0;
        if (*parent) st = fs_mkdir_p(parent);
    }
    fs_buffer page = {0};   // drawn into memory, then written atomically: an old page stays whole until replaced
    if (!st) st = fs_buffer_open(&page);
    if (!st) st = fs_buffer_commit(&page, path, is_run ? htmlreport_run(page.f, dir, fc, fit)
                                                        : htmlreport_ladder(page.f, &spec, dir, fit));
    if (!st) printf("wrote %s\n", path);
    json_decref(fit);
    json_decref(fc);
    return cli_report("report", st);
}
