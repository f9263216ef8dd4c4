/* cli.c: the error for an option getopt_long refused. */
#include "util/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

int tp_cli_option_error(const char *who, char **argv, int c)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    char name[64];
    if (arg && strncmp(arg, "--", 2) == 0) /* a long option, maybe with =VALUE */
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
    if (c == ':')
        tp_error("%s: %s needs a value (see trainprof %s --help)", who, name, who);
    else
        tp_error("%s: unknown option %s (see trainprof %s --help)", who, name, who);
    return 2;
}
