/* builtin-symbolize.c - `vramtrace symbolize [--sysroot DIR] TRACE|DIR...`:
 * resolve on this host every native frame of each trace and write the
 * result beside it (TRACE.sym, src/analyze/vt_symbols.c), so that a report
 * on another machine shows functions and file:line.  The modules are read
 * through the build-id symbol cache (vt_symcache.c): once per build id on
 * a host.  `vramtrace record` does it after the program exits.  Exit: 0
 * every trace done, 1 one could not be read or written, 2 usage.  Touches:
 * the traces (read), the binaries they name (read), TRACE.sym (written),
 * the symbol cache, stdout, stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "vt_analyze.h"
#include "vt_error.h"
#include "vt_tracedir.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: vramtrace symbolize [--sysroot DIR] [--no-symbol-cache] TRACE|DIR...\n"
               "\n"
               "Resolve every native frame of each trace on this host (function, file:line,\n"
               "inlines) and write TRACE.sym beside it: a report on another machine, where\n"
               "the binaries are missing or differ, takes its symbols from there (build ids\n"
               "checked).  `vramtrace record` does this after the program exits.\n"
               "  --sysroot DIR       look for the binaries under DIR\n"
               "  --no-symbol-cache   read every module, and do not keep what it resolved in\n"
               "                      the symbol cache (~/.cache/vramtrace/symbols, or under\n"
               "                      $XDG_CACHE_HOME or $VRAMTRACE_CACHE_DIR;\n"
               "                      VRAMTRACE_SYMBOL_CACHE=0 is the same as this option)\n"
               "  -h, --help          this text\n"
               "Exit status: 0 every trace done, 1 a trace could not be read or its .sym\n"
               "written, 2 usage.\n");
}

typedef struct {
    char *const *paths;
    const char *pfx;
    int quiet;
} sym_cli;

static void on_note(void *arg, const char *msg)
{
    const sym_cli *c = arg;
    fprintf(stderr, "%s%s\n", c->pfx, msg);
}

static void on_done(void *arg, size_t i, int rc, uint64_t nframes, uint64_t nresolved, const char *msg)
{
    const sym_cli *c = arg;
    if (rc) {
        fprintf(stderr, "%s%s\n", c->pfx, msg && msg[0] ? msg : vt_strerror(rc));
        return;
    }
    if (!c->quiet)
        printf("%s.sym: %llu of %llu native frames resolved\n", c->paths[i], (unsigned long long)nresolved,
               (unsigned long long)nframes);
}

int vt_cli_symbolize(char *const *paths, size_t n, const char *sysroot, int use_cache, int quiet,
                     const char *pfx, vt_symbols_stats *st)
{
    char dir[4096] = "";
    if (use_cache)
        vt_symcache_dir(dir, sizeof(dir));
    sym_cli c = {paths, pfx, quiet};
    vt_symbols_opts o = {.sysroot = sysroot,
                         .cache_dir = dir[0] ? dir : NULL,
                         .progress_ms = 1000,
                         .note = on_note,
                         .done = on_done,
                         .arg = &c};
    fflush(stdout);
    int rc = vt_symbols_write_all(paths, n, &o, st);
    if (rc < 0) {
        fprintf(stderr, "%s%s\n", pfx, vt_strerror(rc));
        return (int)n;
    }
    return rc;
}

/* the traces named: files, and the *.zst of directories */
typedef struct {
    char **v;
    size_t n, cap;
} name_list;

static int push(name_list *l, const char *s)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

int cmd_symbolize(int argc, char **argv)
{
    const char *sysroot = NULL;
    int status = 0, n = 0, use_cache = 1;
    name_list l = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto out;
        }
        if (!strcmp(a, "--sysroot")) {
            if (++i >= argc) {
                fprintf(stderr, "vramtrace symbolize: --sysroot needs a directory\n");
                usage(stderr);
                status = 2;
                goto out;
            }
            sysroot = argv[i];
            continue;
        }
        if (!strcmp(a, "--no-symbol-cache")) {
            use_cache = 0;
            continue;
        }
        if (a[0] == '-') {
            fprintf(stderr, "vramtrace symbolize: unknown option '%s'\n", a);
            usage(stderr);
            status = 2;
            goto out;
        }
        n++;
        struct stat st;
        if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) {
            char **names = NULL;
            size_t k = 0;
            if (vt_tracedir_list(a, "vramtrace symbolize", &names, &k) || !k) {
                fprintf(stderr, "vramtrace symbolize: %s: no *.zst trace in it\n", a);
                status = 1;
            }
            for (size_t j = 0; j < k; j++)
                if (push(&l, names[j]))
                    status = 1;
            vt_tracedir_free(names, k);
        } else if (push(&l, a)) {
            status = 1;
        }
    }
    if (!n) {
        fprintf(stderr, "vramtrace symbolize: no trace given\n");
        usage(stderr);
        status = 2;
        goto out;
    }
    if (l.n) {
        vt_symbols_stats st;
        if (vt_cli_symbolize(l.v, l.n, sysroot, use_cache, 0, "vramtrace symbolize: ", &st))
            status = 1;
        printf("%u module%s, %u read (%.1f MiB); %llu address%s, %llu from the cache; "
               "%.2f s resolving on %u thread%s\n",
               st.nmodules, st.nmodules == 1 ? "" : "s", st.nmodules_opened,
               (double)st.opened_bytes / (1 << 20), (unsigned long long)st.naddrs, st.naddrs == 1 ? "" : "es",
               (unsigned long long)st.naddrs_cached, st.resolve_seconds, st.threads,
               st.threads == 1 ? "" : "s");
    }
out:
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    return status;
}
