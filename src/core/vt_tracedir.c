/* vt_tracedir.c: list the regular *.zst files of a directory, sorted. */
#include "vt_tracedir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_error.h"
#include "vt_grow.h"

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static const char *kind_of(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    return "not a regular file";
}

void vt_tracedir_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int vt_tracedir_list(const char *dir, const char *who, char ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    DIR *d = opendir(dir);
    if (!d)
        return VT_ERR_NOT_FOUND;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".zst"))
            continue;
        size_t pl = strlen(dir) + l + 2;
        char *p = malloc(pl);
        if (!p || VT_GROW(names, n, cap, 16)) {
            free(p);
            rc = VT_ERR_NOMEM;
            break;
        }
        snprintf(p, pl, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "%s: %s: skipped, %s\n", who, p,
                    stat(p, &st) != 0 ? "cannot be read (dangling link?)" : kind_of(st.st_mode));
            free(p);
            continue;
        }
        names[n++] = p;
    }
    closedir(d);
    if (rc) {
        vt_tracedir_free(names, n);
        return rc;
    }
    if (n)
        qsort(names, n, sizeof(*names), cmp_str);
    *out = names;
    *nout = n;
    return 0;
}
