// sextant: the command-line edge. Dispatches to a subcommand; the only place (with the cmd_* files) that
// prints errors and chooses exit codes.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include "cli/commands.h"
#include "core/threads.h"
#include "train/runlog.h"
#if __has_include("version.h")
#include "version.h"   // SEXTANT_GIT, written by the Makefile
#endif
#ifndef SEXTANT_GIT
#define SEXTANT_GIT "unknown"
#endif
#define SEXTANT_VERSION "0.23"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *about;
} commands[] = {
    {"train", cmd_train, "train a model on token shards (or synthetic tokens)"},
    {"ladder", cmd_ladder, "run a scaling ladder from a spec: every rung, seed and cooldown branch"},
    {"fit", cmd_fit, "fit scaling laws to a finished ladder (fit.json)"},
    {"forecast", cmd_forecast, "forecast a hero run's whole loss curve, or --check a run against a forecast"},
    {"tokenize", cmd_tokenize, "train a BPE vocabulary, encode/decode text, write token shards"},
    {"import", cmd_import, "read loss curves trained anywhere (CSV/JSONL) into a ladder directory"},
    {"backtest", cmd_backtest, "forecast a ladder's largest sizes from the rest and score the forecasts"},
    {"acc-fit", cmd_accfit, "fit accuracy vs loss on public downstream data (Gadre et al.) and score its predictions"},
    {"lr-fit", cmd_lrfit, "the best peak LR among finished runs that differ only in it (a parabola in ln LR)"},
    {"compare", cmd_compare, "compare variants by their ladders' projected loss at a target compute"},
    {"eval", cmd_eval, "score a checkpoint on downstream tasks (cloze, choice, arith): accuracy and task loss"},
    {"sample", cmd_sample, "generate from a checkpoint with the KV-cache decoder"},
    {"ttc", cmd_ttc, "test-time compute on the arithmetic task: ttc train|verifiers|run"},
    {"report", cmd_report, "one self-contained HTML page for a run or a ladder: plots, checks, laws, configuration"},
    {"export", cmd_export, "write a checkpoint as Hugging Face Llama-style safetensors + config.json"},
    {"import-weights", cmd_import_weights, "read Llama-style safetensors (sextant's export) into a checkpoint"},
    {"inspect", cmd_inspect, "parameters, FLOPs per token and memory of a model descriptor"},
};

// Long commands without a summary line of their own: main prints "sextant NAME: done in T s" on success.
static bool timed(const char *name) {
    static const char *const names[] = {"fit", "forecast", "backtest"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

// GSL's default error handler aborts the process (a core dump and no word from sextant). The fits that can
// fail on their input turn it off and check the status they get back; a GSL error anywhere else is a defect
// in sextant, not in the input: say so, and end with EX_SOFTWARE (70) rather than a crash.
static void gsl_failure(const char *reason, const char *file, int line, int gsl_errno) {
    fflush(stdout);
    fprintf(stderr, "sextant: internal error: a numerical routine failed (GSL, %s:%d: %s; error %d). Please report "
            "it with the command that gave it.\n", file, line, reason, gsl_errno);
    exit(70);
}

static void usage(FILE *out) {
    fprintf(out, "usage: sextant <command> [flags]   (sextant <command> --help for its flags; sextant --version)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].about);
}

int main(int argc, char **argv) {
    threads_wait_policy_setup(argv);   // may re-execute this binary, before the OpenMP runtime is used
    gsl_set_error_handler(gsl_failure);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        const char *wait = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
        printf("sextant %s (git %s)\n", SEXTANT_VERSION, SEXTANT_GIT);
        printf("threads: %d cores; OpenMP waits ", threads_cores());
        if (wait) printf("%s%s%s\n", wait, spin ? ", GOMP_SPINCOUNT=" : "", spin ? spin : "");
        else if (spin) printf("spin then sleep (GOMP_SPINCOUNT=%s)\n", spin);
        else printf("as the runtime decides\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        double t0 = runlog_now();
        int rc = commands[i].fn(argc - 2, argv + 2);
        bool help = argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"));
        fflush(stdout);   // the summary comes after the command's own output
        if (timed(argv[1]) && rc == 0 && !help) fprintf(stderr, "sextant %s: done in %.1f s\n", argv[1], runlog_now() - t0);
        return rc;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (flags_near(argv[1], strlen(argv[1]), commands[i].name)) {
            fprintf(stderr, "sextant: unknown command '%s' (did you mean %s?)\n", argv[1], commands[i].name);
            return 2;
        }
    fprintf(stderr, "sextant: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
