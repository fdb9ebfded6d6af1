/* outfile.c - output files written beside and renamed (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int vt_outfile_open(vt_outfile *o, const char *path, int replace)
{
    memset(o, 0, sizeof(*o));
    struct stat st;
    if (strlen(path) >= sizeof(o->path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!replace && lstat(path, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    snprintf(o->path, sizeof(o->path), "%s", path);
    if (replace && stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* a stream: no file to replace (a rename would put one there) */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        o->f = fdopen(fd, "wb");
        if (!o->f) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        o->direct = 1;
        return 0;
    }
    if (replace && stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
        errno = ENOTSUP; /* a disk: never written by an export */
        return -1;
    }
    snprintf(o->tmp, sizeof(o->tmp), "%s.vt-XXXXXX", path);
    int fd = mkstemp(o->tmp); /* O_CREAT | O_EXCL: a fresh file, never a link's target */
    if (fd < 0)
        return -1;
    /* mkstemp's 0600; a page or an export is as readable as any file made */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um))
        (void)0; /* keeps 0600: still correct, only stricter */
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int vt_outfile_commit(vt_outfile *o, int replace)
{
    int rc = 0, e = 0;
    if (fclose(o->f))
        rc = -1, e = errno;
    o->f = NULL;
    if (o->direct) {
        errno = e;
        return rc;
    }
    if (!rc) {
        if (replace) {
            if (rename(o->tmp, o->path)) /* replaces a link itself, never its target */
                rc = -1, e = errno;
        } else if (link(o->tmp, o->path)) { /* fails with EEXIST, never replaces */
            rc = -1, e = errno;
        }
    }
    if (rc || !replace)
        unlink(o->tmp);
    errno = e;
    return rc;
}

void vt_outfile_abort(vt_outfile *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (!o->direct)
        unlink(o->tmp);
}
