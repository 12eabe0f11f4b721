// fsutil: small filesystem helpers shared by the trainer, the ladder and the CLI.
#ifndef SEXTANT_FSUTIL_H
#define SEXTANT_FSUTIL_H
#include "core/status.h"

// Creates dir and its missing parents (like mkdir -p).
sx_status fs_mkdir_p(const char *dir);

#endif
