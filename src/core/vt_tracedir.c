/* vt_tracedir.c: list the regular *.zst files of a directory, sorted; a
 * directory of job directories lists those of its subdirectories. */
#include "vt_tracedir.h"
#include "vt_escape.h"

#include <dirent.h>
#include <errno.h>
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

/* The regular *.zst files of `dir` appended to *names.  Sets *subdirs to
 * whether `dir` has subdirectories (not named *.zst) to look into. */
static int list_one(const char *dir, const char *who, char ***names, size_t *n, size_t *cap, int *subdirs)
{
    DIR *d = opendir(dir);
    if (!d)
        return VT_ERR_NOT_FOUND;
    struct dirent *de;
    int rc = 0;
    *subdirs = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".zst")) {
            if (de->d_name[0] != '.' && (de->d_type == DT_DIR || de->d_type == DT_LNK || de->d_type == DT_UNKNOWN))
                *subdirs = 1; /* maybe: the caller stats */
            continue;
        }
        size_t pl = strlen(dir) + l + 2;
        char *p = malloc(pl);
        if (!p || VT_GROW(*names, *n, *cap, 16)) {
            free(p);
            rc = VT_ERR_NOMEM;
            break;
        }
        snprintf(p, pl, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            int e = errno;
            char shown[1024];
            const char *why = kind_of(st.st_mode);
            char buf[160];
            if (stat(p, &st) != 0) {
                e = errno;
                if (e == ELOOP)
                    why = "a symbolic link loop (too many levels of links)";
                else if (e == ENOENT)
                    why = "a dangling link (its target does not exist)";
                else {
                    snprintf(buf, sizeof(buf), "cannot be read (%s)", strerror(e));
                    why = buf;
                }
            }
            fprintf(stderr, "%s: %s: skipped, %s\n", who, vt_esc_text_buf(p, shown, sizeof(shown)), why);
            free(p);
            continue;
        }
        (*names)[(*n)++] = p;
    }
    closedir(d);
    return rc;
}

/* A directory without traces of its own: those of its subdirectories (a
 * directory of job directories), each by the same rule, down to `depth`
 * levels (a link that loops stops there). */
static int list_tree(const char *dir, const char *who, char ***names, size_t *n, size_t *cap, int depth)
{
    size_t n0 = *n;
    int subdirs = 0;
    int rc = list_one(dir, who, names, n, cap, &subdirs);
    if (rc || *n > n0 || !subdirs || depth <= 0)
        return rc;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **subs = NULL;
    size_t ns = 0, scap = 0;
    struct dirent *de;
    while ((de = readdir(d)) && !rc) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || (l >= 5 && !strcmp(de->d_name + l - 4, ".zst")))
            continue;
        size_t pl = strlen(dir) + l + 2;
        char *p = malloc(pl);
        if (!p || VT_GROW(subs, ns, scap, 16)) {
            free(p);
            rc = VT_ERR_NOMEM;
            break;
        }
        snprintf(p, pl, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            free(p);
            continue;
        }
        subs[ns++] = p;
    }
    closedir(d);
    for (size_t i = 0; i < ns && !rc; i++) {
        rc = list_tree(subs[i], who, names, n, cap, depth - 1);
        if (rc == VT_ERR_NOT_FOUND) /* unreadable below: no trace there */
            rc = 0;
    }
    vt_tracedir_free(subs, ns);
    return rc;
}

int vt_tracedir_list(const char *dir, const char *who, char ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = list_tree(dir, who, &names, &n, &cap, 8);
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
