/* builtin.h - subcommands of `vramtrace`, one per builtin-*.c. */
#ifndef VT_BUILTIN_H
#define VT_BUILTIN_H
#include <stdio.h>

int cmd_dump(int argc, char **argv);
/* one trace printed into out as `dump [--json] [--stacks]` does; 0 ok, 1 a read error */
int vt_dump_file(FILE *out, const char *path, int json, int stacks);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
/* symbolize one trace (builtin-symbolize.c, also used by record): 0 or 1 */
int vt_cli_symbolize_one(const char *path, const char *sysroot, int quiet);

#endif
