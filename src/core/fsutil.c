#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"

sx_status fs_mkdir_p(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return sx_fail(SX_ERR_ARG, "path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return sx_fail(SX_ERR_IO, "%s: cannot create directory (%s)", path, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return SX_OK;
}

