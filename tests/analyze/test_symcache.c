/* test_symcache.c - the build-id symbol cache's file layer
 * (src/analyze/vt_symcache.c): where it lives (the environment), the key
 * of a module with and without a build id (path, size, mtime), a write
 * read back entry for entry (no lines, an empty function name, inlines),
 * and the damaged files a reader must refuse with a message. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_error.h"

static int fails;
#define CHECK(c, ...)                                                                                        \
    do {                                                                                                     \
        if (!(c)) {                                                                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                      \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
            fails++;                                                                                         \
        }                                                                                                    \
    } while (0)

typedef struct {
    uint64_t rel[8];
    vt_symres r[8];
    int n;
} got_t;

static int add(void *arg, uint64_t rel, const vt_symres *r)
{
    got_t *g = arg;
    if (g->n == 8)
        return VT_ERR_TOO_LARGE;
    g->rel[g->n] = rel;
    vt_symres *d = &g->r[g->n++];
    d->status = r->status;
    d->nlines = r->nlines;
    d->lines = calloc(r->nlines ? r->nlines : 1, sizeof(*d->lines));
    for (uint32_t i = 0; i < r->nlines; i++) {
        d->lines[i] = r->lines[i];
        d->lines[i].function = r->lines[i].function ? strdup(r->lines[i].function) : NULL;
        d->lines[i].file = r->lines[i].file ? strdup(r->lines[i].file) : NULL;
    }
    return 0;
}

static void got_free(got_t *g)
{
    for (int i = 0; i < g->n; i++) {
        for (uint32_t k = 0; k < g->r[i].nlines; k++) {
            free(g->r[i].lines[k].function);
            free(g->r[i].lines[k].file);
        }
        free(g->r[i].lines);
    }
    g->n = 0;
}

static void test_dir(void)
{
    char d[512];
    setenv("VRAMTRACE_CACHE_DIR", "/x/vc", 1);
    CHECK(vt_symcache_dir(d, sizeof(d)) == 0 && !strcmp(d, "/x/vc/symbols"), "VRAMTRACE_CACHE_DIR: %s", d);
    setenv("VRAMTRACE_SYMBOL_CACHE", "0", 1);
    CHECK(vt_symcache_dir(d, sizeof(d)) == 1 && !d[0], "VRAMTRACE_SYMBOL_CACHE=0: %s", d);
    unsetenv("VRAMTRACE_SYMBOL_CACHE");
    unsetenv("VRAMTRACE_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    CHECK(vt_symcache_dir(d, sizeof(d)) == 0 && !strcmp(d, "/xdg/vramtrace/symbols"), "XDG: %s", d);
    setenv("XDG_CACHE_HOME", "relative", 1);
    CHECK(vt_symcache_dir(d, sizeof(d)) == 0 && !strcmp(d, "/home/u/.cache/vramtrace/symbols"),
          "a relative XDG_CACHE_HOME is ignored: %s", d);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK(vt_symcache_dir(d, sizeof(d)) == 1, "no home: no cache");
}

static void test_key(const char *tmp)
{
    char k[160], k2[160], f[600];
    static const uint8_t bid[4] = {0xde, 0xad, 0x00, 0x0f};
    CHECK(vt_symcache_key(k, sizeof(k), "/nowhere", bid, 4) == 0 && !strcmp(k, "dead000f"), "build id: %s",
          k);
    snprintf(f, sizeof(f), "%s/nobid.so", tmp);
    CHECK(vt_symcache_key(k, sizeof(k), f, NULL, 0) == -1, "no build id and no file: no key");
    FILE *fp = fopen(f, "w");
    fputs("one", fp);
    fclose(fp);
    struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
    utimes(f, tv);
    CHECK(vt_symcache_key(k, sizeof(k), f, NULL, 0) == 0 && k[0] == 'p' && strlen(k) == 17, "path key: %s",
          k);
    tv[1].tv_sec++;
    utimes(f, tv);
    CHECK(vt_symcache_key(k2, sizeof(k2), f, NULL, 0) == 0 && strcmp(k, k2), "a new mtime, a new key: %s %s",
          k, k2);
    unlink(f);
}

static void test_roundtrip(const char *dir)
{
    char msg[600], path[700];
    vt_symline l1[2] = {{"inner()", "a.h", 3, 1}, {"outer", "b.c", 9, 0}};
    vt_symline l2[1] = {{NULL, "c.c", 4, 0}}; /* no function name: written empty, read as none */
    vt_symres r[3] = {{VT_SYM_OK, l1, 2}, {VT_SYM_NO_DEBUG_INFO, l2, 1}, {VT_SYM_NO_SYMBOL, NULL, 0}};
    vt_symcache_ent e[3] = {{0x10, &r[0]}, {0x11, &r[1]}, {0x400000, &r[2]}};
    CHECK(vt_symcache_write(dir, "k1", e, 3, msg, sizeof(msg)) == 0, "write: %s", msg);
    got_t g = {.n = 0};
    int rc = vt_symcache_read(dir, "k1", add, &g, msg, sizeof(msg));
    CHECK(rc == 0 && g.n == 3, "read back: rc %d, %d entries, %s", rc, g.n, msg);
    if (g.n == 3) {
        CHECK(g.rel[0] == 0x10 && g.r[0].nlines == 2 && !strcmp(g.r[0].lines[0].function, "inner()") &&
                  g.r[0].lines[0].inlined && g.r[0].lines[1].line == 9 &&
                  !strcmp(g.r[0].lines[1].file, "b.c"),
              "entry 1");
        CHECK(g.r[1].status == VT_SYM_NO_DEBUG_INFO && g.r[1].nlines == 1 && !g.r[1].lines[0].function &&
                  !strcmp(g.r[1].lines[0].file, "c.c"),
              "entry 2: the empty function name");
        CHECK(g.rel[2] == 0x400000 && g.r[2].status == VT_SYM_NO_SYMBOL && g.r[2].nlines == 0,
              "entry 3: no lines");
    }
    got_free(&g);
    CHECK(vt_symcache_read(dir, "k2", add, &g, msg, sizeof(msg)) == VT_ERR_NOT_FOUND && !msg[0],
          "no file: not found, no message");

    /* damage: each refused with a message naming the file, nothing added */
    snprintf(path, sizeof(path), "%s/k1.cache", dir);
    struct stat st;
    stat(path, &st);
    CHECK(truncate(path, st.st_size - 3) == 0, "truncate");
    rc = vt_symcache_read(dir, "k1", add, &g, msg, sizeof(msg));
    CHECK(rc == VT_ERR_CORRUPT && strstr(msg, "k1.cache: truncated") && g.n == 0, "truncated: %d %s", rc,
          msg);
    vt_symcache_write(dir, "k1", e, 3, msg, sizeof(msg));
    FILE *f = fopen(path, "r+");
    fseek(f, 40, SEEK_SET);
    fputc('X', f);
    fclose(f);
    rc = vt_symcache_read(dir, "k1", add, &g, msg, sizeof(msg));
    CHECK(rc == VT_ERR_CORRUPT && strstr(msg, "checksum") && g.n == 0, "a flipped byte: %d %s", rc, msg);
    /* a file renamed to another key is that module's no more */
    vt_symcache_write(dir, "k1", e, 3, msg, sizeof(msg));
    char other[700];
    snprintf(other, sizeof(other), "%s/k3.cache", dir);
    rename(path, other);
    rc = vt_symcache_read(dir, "k3", add, &g, msg, sizeof(msg));
    CHECK(rc == VT_ERR_VERSION && strstr(msg, "another module") && g.n == 0, "another key: %d %s", rc, msg);
    f = fopen(other, "w");
    fputs("vramtrace-symcache 2 k3\nE 0 0\n", f);
    fclose(f);
    rc = vt_symcache_read(dir, "k3", add, &g, msg, sizeof(msg));
    CHECK(rc == VT_ERR_VERSION && strstr(msg, "another version"), "another version: %d %s", rc, msg);
    unlink(other);
}

int main(void)
{
    char tmp[] = "/tmp/vt-symcache-test-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/a/b", tmp); /* made by the writer */
    test_dir();
    test_key(tmp);
    test_roundtrip(dir);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd)) {
    }
    if (!fails)
        printf("symcache files: ok\n");
    return fails != 0;
}
