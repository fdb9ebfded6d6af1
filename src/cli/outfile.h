/* outfile.h - the files the commands write (export's output, the report's
 * and diff's page) without following a link planted at their path:
 * written beside as PATH.vt-XXXXXX (mkstemp: O_CREAT|O_EXCL, a new name
 * that cannot be a link) and renamed over PATH once complete, so a link at
 * PATH is replaced, never written through, and a failed write leaves what
 * was there.  A path the user did not name (export's default) replaces
 * nothing: an existing entry there, a link included, is refused.  A named
 * path that is a stream (a character device such as /dev/null or a
 * terminal, a FIFO, or a link to one: /dev/stdout) is written into as it
 * is: renaming over it would put a regular file in its place. */
#ifndef VT_OUTFILE_H
#define VT_OUTFILE_H
#include <stdio.h>

typedef struct {
    FILE *f;        /* write here */
    char path[4096];
    char tmp[4200];
    int direct;     /* written into path itself (a stream), nothing to rename */
} vt_outfile;

/* Open path for writing.  replace: 1 when the user named path (-o, --html
 * FILE): what is there is replaced; 0 when the command chose it: refused
 * (errno EEXIST) when anything is there.  0 ok, -1 with errno. */
int vt_outfile_open(vt_outfile *o, const char *path, int replace);

/* Close and rename over the path (with replace 0, linked in without
 * replacing: link(2), EEXIST if something appeared).  0 ok, -1 with errno
 * (the temporary file is removed). */
int vt_outfile_commit(vt_outfile *o, int replace);

/* Close and remove the temporary file: nothing is written. */
void vt_outfile_abort(vt_outfile *o);

#endif
