/* cmd_mcp.c: `trainprof mcp`: a Model Context Protocol server over stdio,
 * which is the Python package's (python/trainprof/mcp_server.py, on the
 * official MCP SDK): this finds the Python that has the package and
 * becomes it, its arguments passed on (docs/mcp.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "util/log.h"
#include "util/package_python.h"

#define MODULE "trainprof.mcp_server"

static const char usage[] =
    "usage: trainprof mcp [--root DIR]...\n"
    "\n"
    "A Model Context Protocol server on standard input and output, for an\n"
    "assistant (Claude, Cursor, VS Code...): its tools list the live recordings\n"
    "and the run files in a folder, report one or several run files, compare\n"
    "two, say how a run stalled or died, ask a live run for a capture window\n"
    "and give a metric's series. Every path they take must lie in a --root.\n"
    "Needs the MCP Python SDK: pip install 'trainprof[mcp]'.\n"
    "\n"
    "options:\n"
    "  --root DIR  a folder the tools may read, again for more (default: the\n"
    "              current one)\n"
    "  -h, --help  show this help\n"
    "\n"
    "example (an assistant's configuration):\n"
    "  {\"command\": \"trainprof\", \"args\": [\"mcp\", \"--root\", \"/data/runs\"]}\n";

int cmd_mcp(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) { /* --root DIR, each a pair */
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--root") != 0 || i + 1 >= argc) {
            tp_error("mcp: %s: expected --root DIR (see trainprof mcp --help)", argv[i]);
            return 2;
        }
    }
    char python[PATH_MAX], tried[3 * PATH_MAX + 64], self[PATH_MAX];
    if (!tp_package_python(MODULE, python, sizeof python, tried, sizeof tried)) {
        tp_error("mcp: no Python here imports trainprof's package (tried %s): pip install "
                 "'trainprof[mcp]' into one, or name it with TRAINPROF_PYTHON",
                 tried[0] ? tried : "python3");
        return 2;
    }
    if (!tp_self_path(self, sizeof self)) {
        tp_error("mcp: cannot find this program (/proc/self/exe): %s", strerror(errno));
        return 2;
    }
    char **args = calloc((size_t)argc + 6, sizeof *args);
    if (!args) {
        tp_error("mcp: out of memory");
        return 2;
    }
    size_t n = 0;
    args[n++] = python;
    args[n++] = "-m";
    args[n++] = MODULE;
    args[n++] = "--trainprof";
    args[n++] = self;
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    fflush(NULL);
    execvp(python, args);
    tp_error("mcp: cannot run %s: %s", python, strerror(errno));
    free(args);
    return 2;
}
