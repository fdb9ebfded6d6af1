/* builtin-symbolize.c - `vramtrace symbolize [--sysroot DIR] TRACE|DIR...`:
 * resolve on this host every native frame of each trace and write the
 * result beside it (TRACE.sym, src/analyze/vt_symbols.c), so that a report
 * on another machine shows functions and file:line.  `vramtrace record`
 * does it after the program exits.  Exit: 0 every trace done, 1 one could
 * not be read or written, 2 usage.  Touches: the traces (read), the
 * binaries they name (read), TRACE.sym (written), stdout, stderr. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "vt_analyze.h"
#include "vt_error.h"
#include "vt_tracedir.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: vramtrace symbolize [--sysroot DIR] TRACE|DIR...\n"
               "\n"
               "Resolve every native frame of each trace on this host (function, file:line,\n"
               "inlines) and write TRACE.sym beside it: a report on another machine, where\n"
               "the binaries are missing or differ, takes its symbols from there (build ids\n"
               "checked).  `vramtrace record` does this after the program exits.\n"
               "  --sysroot DIR   look for the binaries under DIR\n"
               "  -h, --help      this text\n"
               "Exit status: 0 every trace done, 1 a trace could not be read or its .sym\n"
               "written, 2 usage.\n");
}

int vt_cli_symbolize_one(const char *path, const char *sysroot, int quiet)
{
    uint64_t nf = 0, nr = 0;
    char msg[600];
    int rc = vt_symbols_write(path, sysroot, &nf, &nr, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "vramtrace symbolize: %s\n", msg[0] ? msg : vt_strerror(rc));
        return 1;
    }
    if (!quiet)
        printf("%s.sym: %llu of %llu native frames resolved\n", path, (unsigned long long)nr,
               (unsigned long long)nf);
    return 0;
}

int cmd_symbolize(int argc, char **argv)
{
    const char *sysroot = NULL;
    int status = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--sysroot")) {
            if (++i >= argc) {
                fprintf(stderr, "vramtrace symbolize: --sysroot needs a directory\n");
                usage(stderr);
                return 2;
            }
            sysroot = argv[i];
            continue;
        }
        if (a[0] == '-') {
            fprintf(stderr, "vramtrace symbolize: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
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
                status |= vt_cli_symbolize_one(names[j], sysroot, 0);
            vt_tracedir_free(names, k);
        } else {
            status |= vt_cli_symbolize_one(a, sysroot, 0);
        }
    }
    if (!n) {
        fprintf(stderr, "vramtrace symbolize: no trace given\n");
        usage(stderr);
        return 2;
    }
    return status;
}
