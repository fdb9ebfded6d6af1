/* vt_tracedir.h: the trace files of a directory, as every command sees them.
 *
 * A trace directory holds one vt-<host>-<pid>.zst per process.  Only regular
 * files are traces: a FIFO, socket, device or directory named *.zst would
 * block or fail on open, so it is named on stderr and skipped.  Symlinks are
 * followed (stat), as a user who links a trace in expects.  A directory
 * with no trace of its own stands for those of its subdirectories (a
 * directory of job directories), each by the same rule, 8 levels down;
 * names starting with '.' are not looked into. */
#ifndef VT_TRACEDIR_H
#define VT_TRACEDIR_H

#include <stddef.h>

/* Fills *names (sorted by name, "dir/file", each malloc'd) and *n.
 * `who` prefixes the skip message ("vramtrace report").  Returns 0,
 * VT_ERR_NOT_FOUND when the directory cannot be opened, or VT_ERR_NOMEM.
 * An empty list is not an error here: the caller says what it means. */
int vt_tracedir_list(const char *dir, const char *who, char ***names, size_t *n);
void vt_tracedir_free(char **names, size_t n);

#endif
