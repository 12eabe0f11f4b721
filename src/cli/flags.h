// flags: one declarative table per subcommand generates the parser, --help, and the resolved
// configuration echoed into a run directory. Not responsible for what the values mean.
#ifndef SEXTANT_FLAGS_H
#define SEXTANT_FLAGS_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { FLAG_STR, FLAG_INT, FLAG_DOUBLE, FLAG_BOOL } flag_type;

typedef struct {
    const char *name;    // long name without dashes: "lr" is given as --lr 0.01 or --lr=0.01
    flag_type type;
    void *target;        // const char ** | long * | double * | bool *
    const char *defval;  // default as text (NULL: empty string / 0 / false)
    const char *help;
} flag_def;

// Applies defaults, then parses argv[0..argc) (argv[0] is the first argument after the subcommand).
// Non-flag arguments are returned in order in pos (at most max_pos; more is an error).
// Booleans: --name, --name=true|false, --no-name. Returns SX_ERR_ARG with a message naming the flag on an
// unknown flag, a missing value or a malformed number. *help is set when --help or -h was given.
sx_status flags_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                      int *npos, bool *help);
// The start of every subcommand: flags_parse, and on --help the usage (flags_usage) on stdout. Returns true
// when it printed the usage (the command then exits with 0); otherwise false, with the parse status in *st.
bool flags_help_or_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                         int *npos, const char *synopsis, const char *about, sx_status *st);
// Prints "usage: sextant <synopsis>" and one line per flag with its default and help.
void flags_usage(FILE *out, const char *synopsis, const char *about, const flag_def *defs, size_t n);
// The resolved values as a JSON object {name: value}.
json_t *flags_to_json(const flag_def *defs, size_t n);

#endif
