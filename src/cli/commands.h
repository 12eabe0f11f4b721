// commands: the subcommands of the sextant binary. Each takes the arguments after its name and returns
// the process exit code (0 ok, 1 runtime error, 2 usage error); each prints its own --help.
#ifndef SEXTANT_CLI_COMMANDS_H
#define SEXTANT_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_ladder(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_forecast(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_backtest(int argc, char **argv);
int cmd_accfit(int argc, char **argv);
int cmd_lrfit(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_ttc(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import_weights(int argc, char **argv);

// Prints "sextant <cmd>: <message>" for a failed status and returns the exit code for it.
#include "core/status.h"
int cli_report(const char *cmd, sx_status st);
// Says on stderr, before the work, what fitting a curve ladder's joint law takes (silent for minutes otherwise;
// its annealing term costs about points x steps, so 9,000 points of 200,000-step runs take minutes):
// "sextant fit: fitting 74 runs, 1491 evaluations: ...".
#include "runs/import.h"
void cli_say_fitting(const char *cmd, const import_ladder *l);
// The note after a fit or backtest of several sizes whose inner error left one run out (why: the reason it gave).
void cli_note_by_run(const char *why);

#endif
