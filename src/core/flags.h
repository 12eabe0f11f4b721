// flags: one declarative table per subcommand generates the parser, --help, the resolved configuration
// echoed into a run directory, and (flags_to_argv) the command line that reproduces the values, for a
// parent that starts the command as a child process. Not responsible for what the values mean.
#ifndef SEXTANT_CORE_FLAGS_H
#define SEXTANT_CORE_FLAGS_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { FLAG_STR, FLAG_INT, FLAG_DOUBLE, FLAG_BOOL, FLAG_FLOAT } flag_type;

typedef struct {
    const char *name;    // long name without dashes: "lr" is given as --lr 0.01 or --lr=0.01
    flag_type type;
    void *target;        // const char ** | long * | double * | bool * | float *
    const char *defval;  // default as text (NULL: empty string / 0 / false)
    const char *help;
} flag_def;

// Sets every target to its default.
sx_status flags_set_defaults(const flag_def *defs, size_t n);
// flags_set_defaults, then flags_parse_args.
sx_status flags_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                      int *npos, bool *help);
// Parses argv[0..argc) (argv[0] is the first argument after the subcommand).
// Non-flag arguments are returned in order in pos (at most max_pos; more is an error).
// Booleans: --name, --name=true|false, --no-name. Returns SX_ERR_ARG with a message naming the flag on an
// unknown flag, a missing value or a malformed number. *help is set when --help or -h was given.
// Leaves targets not named in argv as they are.
sx_status flags_parse_args(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                           int *npos, bool *help);
// The start of every subcommand: flags_parse, and on --help the usage (flags_usage) on stdout. Returns true
// when it printed the usage (the command then exits with 0); otherwise false, with the parse status in *st.
bool flags_help_or_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                         int *npos, const char *synopsis, const char *about, sx_status *st);
// Prints "usage: sextant <synopsis>" and one line per flag with its default and help.
void flags_usage(FILE *out, const char *synopsis, const char *about, const flag_def *defs, size_t n);
// The shortest decimal (as a double) that reads back as f: the value a user would have typed (0.007, not
// 0.00700000021607), for writing float settings into JSON.
double float_as_typed(float f);
// The resolved values as a JSON object {name: value} (a float as the shortest decimal that reads back as it).
json_t *flags_to_json(const flag_def *defs, size_t n);
// "--name VALUE" for every flag ("--name" or "--no-name" for a boolean), in table order, appended to argv[*argc..) with the strings in buf (size
// bytes); flags_parse_args of the result sets every target to the value it has now (numbers are printed
// with enough digits to read back exactly). argv stays NULL-terminated. SX_ERR_ARG when buf or max
// (argv's capacity, the NULL included) is too small.
sx_status flags_to_argv(const flag_def *defs, size_t n, char *buf, size_t size, char **argv, int *argc, int max);

#endif
