#include <stdio.h>
#include "cli/commands.h"

int cli_report(const char *cmd, sx_status st) {
    if (st == SX_OK) return 0;
    fprintf(stderr, "sextant %s: %s\n", cmd, sx_last_error());
    return st == SX_ERR_ARG ? 2 : 1;
}
