/* main.c - `vramtrace` command dispatch.  One builtin-*.c per subcommand
 * (perf's layout); each exports `int cmd_NAME(int argc, char **argv)` with
 * argv[0] the subcommand name.  Exit codes: 0 ok, 1 error, 2 usage, 3 a
 * --fail-on-* threshold was exceeded. */
#include <stdio.h>
#include <string.h>

#include "builtin.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0" /* set from CMakeLists.txt's project() */
#endif

static const struct cmd_struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"dump", cmd_dump, "print the events of a trace, one per line"},
    {"report", cmd_report, "leaks, growth, peak, OOM and allocator view of traces"},
    {"diff", cmd_diff, "compare two traces per call site"},
    {"export", cmd_export, "traces for Perfetto, chrome://tracing and PyTorch's memory_viz"},
    {"symbolize", cmd_symbolize, "resolve a trace's native frames here, for reports elsewhere"},
    {"record", cmd_record, "run a command with tracing: vramtrace record -- CMD ARGS..."},
    {"top", cmd_top, "live view of traces being written: vramtrace top DIR"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: vramtrace <command> [options] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nvramtrace <command> --help for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vramtrace %s\n", VT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "vramtrace: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
