/* builtin.h - subcommands of `vramtrace`, one per builtin-*.c. */
#ifndef VT_BUILTIN_H
#define VT_BUILTIN_H
#include <stdio.h>

#include <stddef.h>

#include "vt_analyze.h"

int cmd_dump(int argc, char **argv);
/* one trace printed into out as `dump [--json] [--stacks]` does; 0 ok, 1 a read error */
int vt_dump_file(FILE *out, const char *path, int json, int stacks);
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
/* Write TRACE.sym beside each of n traces through the symbol cache (off
 * when use_cache is 0 or vt_symcache_dir has none): builtin-symbolize.c,
 * also used by record.  Errors, a damaged cache file and progress (after a
 * second) go to stderr after pfx; unless quiet, one line per trace on
 * stdout.  Returns the number of traces that failed; *st says what it did. */
int vt_cli_symbolize(char *const *paths, size_t n, const char *sysroot, int use_cache, int quiet, const char *pfx,
                     vt_symbols_stats *st);

#endif
