/* builtin.h - subcommands of `vramtrace`, one per builtin-*.c. */
#ifndef VT_BUILTIN_H
#define VT_BUILTIN_H

int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_top(int argc, char **argv);
/* record --live (builtin-top.c): the live view of `dir` until `child`
 * ends; its wait status in *ws.  0, or 1 when no view could be shown. */
#include <sys/types.h>
int vt_top_watch(const char *dir, pid_t child, int *ws);
/* symbolize one trace (builtin-symbolize.c, also used by record): 0 or 1 */
int vt_cli_symbolize_one(const char *path, const char *sysroot, int quiet);

#endif
