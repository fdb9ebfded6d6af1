/* builtin.h - subcommands of `vramtrace`, one per builtin-*.c. */
#ifndef VT_BUILTIN_H
#define VT_BUILTIN_H

int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif
