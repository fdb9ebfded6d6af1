/* vt_symcache.c - the build-id symbol cache (issue 35, as perf's ~/.debug
 * or debuginfod's cache): what a module's addresses resolved to, kept per
 * host so that a module is read with libdwfl once per build id and only
 * for the addresses traces referenced.  One file per module, named by its
 * key (the build id in hex, or "p" and a hash of path, size and mtime for a
 * module without one), in the cache directory:
 *
 *   vramtrace-symcache 1 KEY
 *   S <address in the file, hex> <status> <lines>
 *   L <line> <inlined 0|1> <function>\t<file>      (lines times, innermost first)
 *   E <entries> <FNV-1a 64 of every byte before this line, hex>
 *
 * The entries are those of TRACE.sym (vt_symbols.c) less the build-id hash
 * (the file is the module); an entry may have no lines (no symbol there: the
 * answer is cached too).  A file is written whole beside its final name and
 * renamed over it, under an flock of KEY.lock, so a reader sees the old file
 * or the new one; a crash or a full disk leaves at worst a file whose last
 * line is not a matching E, which is read as damaged: ignored with one
 * message and rewritten by the next writer.  May touch: the cache directory
 * (created 0755 if missing), its files.  Thread-safe (no shared state). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_error.h"

#define SC_MAGIC "vramtrace-symcache 1 "
#define SC_MAX_FILE (512u << 20) /* a cache file larger than this is not read */
#define SC_MAX_LINES 64          /* inline levels per address */

int vt_symcache_dir(char *out, size_t len)
{
    out[0] = 0;
    const char *off = getenv("VRAMTRACE_SYMBOL_CACHE");
    if (off && (!strcmp(off, "0") || !strcmp(off, "off")))
        return 1;
    /* beside the PyTorch shims (record_torch.c): one cache of vramtrace */
    const char *env = getenv("VRAMTRACE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (env && *env)
        n = snprintf(out, len, "%s/symbols", env);
    else if (xdg && xdg[0] == '/') /* the XDG spec: a relative value is ignored */
        n = snprintf(out, len, "%s/vramtrace/symbols", xdg);
    else if (home && *home)
        n = snprintf(out, len, "%s/.cache/vramtrace/symbols", home);
    else
        return 1;
    if (n < 0 || (size_t)n >= len) {
        out[0] = 0;
        return 1;
    }
    return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#define FNV0 1469598103934665603ull

int vt_symcache_key(char *out, size_t len, const char *file, const uint8_t *bid, uint32_t bid_len)
{
    out[0] = 0;
    if (bid_len) {
        if (len < 2 * (size_t)bid_len + 1)
            return -1;
        for (uint32_t i = 0; i < bid_len; i++)
            snprintf(out + 2 * i, 3, "%02x", bid[i]);
        return 0;
    }
    /* no build id: the file as it is now (a rebuilt file has a new mtime) */
    struct stat st;
    if (!file || !*file || stat(file, &st) || !S_ISREG(st.st_mode))
        return -1;
    uint64_t h = fnv(FNV0, file, strlen(file));
    uint64_t v[3] = {(uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec};
    h = fnv(h, v, sizeof(v));
    return snprintf(out, len, "p%016" PRIx64, h) >= (int)len ? -1 : 0;
}

static void cache_path(char *out, size_t len, const char *dir, const char *key, const char *ext)
{
    snprintf(out, len, "%s/%s%s", dir, key, ext);
}

/* the next line of buf[*pos..n) without its newline; NULL at the end or for
 * a last line without one */
static char *next_line(char *buf, size_t n, size_t *pos, size_t *llen)
{
    if (*pos >= n)
        return NULL;
    char *b = buf + *pos, *nl = memchr(b, '\n', n - *pos);
    if (!nl)
        return NULL;
    *nl = 0;
    *llen = (size_t)(nl - b);
    *pos += *llen + 1;
    return b;
}

int vt_symcache_read(const char *dir, const char *key, vt_symcache_add_fn add, void *arg, char *msg,
                     size_t len)
{
    char path[4200];
    cache_path(path, sizeof(path), dir, key, ".cache");
    msg[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return VT_ERR_NOT_FOUND;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SC_MAX_FILE) {
        close(fd);
        snprintf(msg, len, "%s: not a cache file of at most %u MiB", path, SC_MAX_FILE >> 20);
        return VT_ERR_TOO_LARGE;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return VT_ERR_NOMEM;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    n = got;
    buf[n] = 0;
    int rc = VT_ERR_CORRUPT;
    const char *why = "";
    /* the trailer first: the last line, E COUNT HASH of what precedes it */
    size_t tail = n;
    if (n && buf[n - 1] == '\n')
        tail--;
    while (tail && buf[tail - 1] != '\n')
        tail--;
    uint64_t want_n, want_h;
    char magic[200];
    snprintf(magic, sizeof(magic), SC_MAGIC "%s\n", key);
    if (n < strlen(magic) || memcmp(buf, magic, strlen(magic))) {
        why = strncmp(buf, "vramtrace-symcache ", 19)    ? "not a vramtrace symbol cache file"
              : strncmp(buf, SC_MAGIC, strlen(SC_MAGIC)) ? "another version of the cache format"
                                                         : "the file of another module";
        rc = VT_ERR_VERSION;
        goto out;
    }
    if (!n || buf[n - 1] != '\n' || sscanf(buf + tail, "E %" SCNu64 " %" SCNx64, &want_n, &want_h) != 2) {
        why = "truncated (no end line)";
        goto out;
    }
    if (fnv(FNV0, buf, tail) != want_h) {
        why = "damaged (its checksum does not match)";
        goto out;
    }
    size_t pos = strlen(magic), ll;
    uint64_t nent = 0;
    vt_symline lines[SC_MAX_LINES];
    char *line;
    while (pos < tail && (line = next_line(buf, tail, &pos, &ll))) {
        uint64_t rel;
        int status;
        unsigned nl;
        if (sscanf(line, "S %" SCNx64 " %d %u", &rel, &status, &nl) != 3 || nl > SC_MAX_LINES || status < 0 ||
            status > VT_SYM_NO_DEBUG_INFO) {
            why = "an entry does not parse";
            goto out;
        }
        unsigned k = 0;
        for (; k < nl && (line = next_line(buf, tail, &pos, &ll)); k++)
            if (vt_symline_parse(line, ll, &lines[k]))
                break;
        int arc = 0;
        if (k == nl) {
            vt_symres res = {status, nl ? lines : NULL, nl};
            arc = add(arg, rel, &res);
            nent++;
        }
        for (unsigned j = 0; j < k; j++) {
            free(lines[j].function);
            free(lines[j].file);
        }
        if (k != nl) {
            why = "an entry's lines do not parse";
            goto out;
        }
        if (arc) {
            rc = arc;
            goto out_quiet;
        }
    }
    if (nent != want_n) {
        why = "its entry count does not match";
        goto out;
    }
    rc = 0;
    goto out_quiet;
out:
    snprintf(msg, len, "%s: %s", path, why);
out_quiet:
    free(buf);
    return rc;
}

static int mkdir_p(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0755) && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

int vt_symcache_lock(const char *dir, const char *key)
{
    char path[4200];
    if (mkdir_p(dir))
        return -1;
    cache_path(path, sizeof(path), dir, key, ".lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX)) {
        if (errno != EINTR) {
            /* a file system without locks: the rename still keeps every
             * file whole, two writers may only lose each other's entries */
            break;
        }
    }
    return fd;
}

void vt_symcache_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

static void put_name(FILE *f, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

int vt_symcache_write(const char *dir, const char *key, const vt_symcache_ent *ents, size_t n, char *msg,
                      size_t len)
{
    char path[4200], tmp[4300];
    msg[0] = 0;
    if (mkdir_p(dir)) {
        snprintf(msg, len, "%s: %s", dir, strerror(errno));
        return VT_ERR_IO;
    }
    cache_path(path, sizeof(path), dir, key, ".cache");
    /* unique per process and thread: two writers never share a temporary */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%ld", path, (int)getpid(), (long)syscall(SYS_gettid));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(msg, len, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        return VT_ERR_IO;
    }
    /* the body goes through a memory stream first: the trailer hashes it */
    char *body = NULL;
    size_t blen = 0;
    FILE *m = open_memstream(&body, &blen);
    if (!m) {
        fclose(f);
        unlink(tmp);
        return VT_ERR_NOMEM;
    }
    fprintf(m, SC_MAGIC "%s\n", key);
    for (size_t i = 0; i < n; i++) {
        const vt_symres *r = ents[i].r;
        uint32_t nl = r->nlines < SC_MAX_LINES ? r->nlines : SC_MAX_LINES;
        fprintf(m, "S %" PRIx64 " %d %u\n", ents[i].rel, r->status, nl);
        for (uint32_t l = 0; l < nl; l++) {
            fprintf(m, "L %u %d ", r->lines[l].line, r->lines[l].inlined ? 1 : 0);
            put_name(m, r->lines[l].function);
            fputc('\t', m);
            put_name(m, r->lines[l].file);
            fputc('\n', m);
        }
    }
    int bad = fclose(m) != 0;
    if (!bad) {
        fwrite(body, 1, blen, f);
        fprintf(f, "E %zu %" PRIx64 "\n", n, fnv(FNV0, body, blen));
    }
    free(body);
    bad |= ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        snprintf(msg, len, "%s: %s", bad ? tmp : path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return errno == ENOSPC ? VT_ERR_NOSPACE : VT_ERR_IO;
    }
    return 0;
}
