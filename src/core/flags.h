// flags: one declarative table per subcommand generates the parser, --help, the resolved configuration
// echoed into a run directory, and (flags_to_argv) the command line that reproduces the values, for a
// parent that starts the command as a child process. Not responsible for what the values mean.
#ifndef SEXTANT_CORE_FLAGS_H
#define SEXTANT_CORE_FLAGS_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { FLAG_STR, FLAG_INT, FLAG_DOUBLE, FLAG_BOOL, FLAG_FLOAT, FLAG_CHOICE } flag_type;

typedef struct {
    const char *name;    // long name without dashes: "lr" is given as --lr 0.01 or --lr=0.01
    flag_type type;
    void *target;        // const char ** | long * | double * | bool * | float * | flag_choice *
    const char *defval;  // default as text (NULL: empty string / 0 / false)
    const char *help;
} flag_def;

// The target of a FLAG_CHOICE: the words it takes, '|'-separated ("size|role"), and where the index of the
// one given goes; any other word is refused: "--NAME: 'WORD' is not size or role". In a table row:
//   {"protocol", FLAG_CHOICE, &(flag_choice){&protocol, "size|role"}, "size", "..."}
typedef struct {
    int *index;
    const char *words;
} flag_choice;

// Sets every target to its default.
sx_status flags_set_defaults(const flag_def *defs, size_t n);
// flags_set_defaults, then flags_parse_args.
sx_status flags_parse(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                      int *npos, bool *help, bool *given);
// Parses argv[0..argc) (argv[0] is the first argument after the subcommand).
// Non-flag arguments are returned in order in pos (at most max_pos; more is an error).
// Booleans: --name, --name=true|false, --no-name. Returns SX_ERR_ARG with a message naming the flag on an
// unknown flag, a missing value or a malformed number. *help is set when --help or -h was given.
// Leaves targets not named in argv as they are. given (NULL: not wanted) has one entry per flag: set true
// for each flag argv names, whatever its value (a flag given at its default value is given).
sx_status flags_parse_args(const flag_def *defs, size_t n, int argc, char **argv, const char **pos, int max_pos,
                           int *npos, bool *help, bool *given);
// Whether word (len bytes) is a likely typo of name: at most 2 single-character edits (insert, delete,
// substitute, swap two neighbours) and fewer than half its length. For "did you mean" hints.
bool flags_near(const char *word, size_t len, const char *name);

// The flags of a table declared as an array.
#define FLAGS_COUNT(table) (sizeof(table) / sizeof *(table))

// A subcommand's usage and positional arguments: with its flag table, everything its start needs.
typedef struct {
    const char *synopsis;     // "usage: sextant <synopsis>"
    const char *about;        // the paragraph under it in --help (NULL: none)
    int min_pos, max_pos;     // positional arguments taken; max_pos at most FLAGS_MAX_POS
    const char *few_pos;      // the error when fewer than min_pos are given
} flags_command;

enum { FLAGS_MAX_POS = 64, FLAGS_MAX_DEFS = 96 };
// What flags_start read: the positional arguments in order, the first error (SX_OK when none; its message
// in sx_last_error()), and which flags argv named (flags_given).
typedef struct {
    const char *pos[FLAGS_MAX_POS];
    int npos;
    sx_status st;
    const flag_def *defs;
    size_t ndefs;
    bool given[FLAGS_MAX_DEFS];
} flags_args;

// The start of every subcommand: flags_parse (every target set, from its default or argv), on --help the
// usage (flags_usage) on stdout, then the positional arguments' count. Returns true when it printed the
// usage (the command then exits with 0); otherwise false, with what it read in *a.
bool flags_start(const flags_command *c, const flag_def *defs, size_t n, int argc, char **argv, flags_args *a);
// Whether argv named the flag (--NAME, --NAME=V, --no-NAME), even at its default value: how a command
// tells a setting the user asked for from one it would ignore. name must be in the table (checked).
bool flags_given(const flags_args *a, const char *name);
// The first flag of a comma-separated list of names ("n,seed,vocab") that argv named, or NULL: for the error
// "--seed is a setting of --task".
const char *flags_first_given(const flags_args *a, const char *names);
// SX_ERR_ARG when argv named a flag outside the comma-separated list allowed, which a command's mode WHAT
// would ignore: "--model does not apply to --check-run (it takes --ladder, --check-run, --loss or --forecast)".
sx_status flags_only(const flags_args *a, const char *allowed, const char *what);
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
