/* builtin-report.c - `vramtrace report [options] TRACE|DIR...`: replay the
 * traces (one process each; a directory means all its *.zst files) and
 * print the report (docs/REPORT.md).  Exit: 0 ok, 1 read error (the report
 * of what was readable is printed first), 2 usage, 3 a --fail-on-*
 * threshold was exceeded.  Touches: the named traces (read), stdout,
 * stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "vt_escape.h"
#include "outfile.h"
#include "vt_analyze.h"
#include "vt_error.h"

static void report_usage(FILE *f)
{
    fprintf(f,
            "usage: vramtrace report [options] TRACE|DIR...\n"
            "  --json               JSON output (schema in docs/REPORT.md)\n"
            "  --html FILE          write the report as one self-contained HTML page\n"
            "                       (timeline, flamegraph, tables; opens offline) instead of\n"
            "                       the text (stdout says where it went; - = the page on stdout)\n"
            "  --at TIME|MARKER     leak view at TIME after the start (1.5s, 200ms) or at the last\n"
            "                       NVTX mark/range MARKER; `--at end` = end of trace.\n"
            "                       Default: the end of the last kernel.  A view that sees\n"
            "                       fewer than 5 steps cannot tell a leak (it says so).\n"
            "  --steps NAME         the NVTX range that counts the steps (trailing digits\n"
            "                       stripped: `step` for step0, step1, ...); default: found\n"
            "  --fail-on-leak BYTES   exit 3 when more than BYTES (e.g. 64M) leaked: never freed\n"
            "                       (weights held to the end included), growing sites whole\n"
            "  --fail-on-growth BYTES exit 3 when call sites grew by more than BYTES in all\n"
            "  --top N              rows per section (default 20)\n"
            "  --frames N           frames shown per stack in text (default 24)\n"
            "  --native             text: every native frame (default: framework and runtime\n"
            "                       frames folded into one line naming their libraries)\n"
            "  --no-symbols         do not read binaries to symbolize native frames\n"
            "  --no-symbol-cache    read the binaries even for addresses the symbol cache\n"
            "                       (~/.cache/vramtrace/symbols, filled by record) has\n"
            "  --sysroot DIR        look for the traced binaries under DIR\n"
            "  --no-progress        never print progress on stderr\n"
            "  --max-memory BYTES   one budget for all the analysis keeps (names, call sites,\n"
            "                       processes; default 1G): past it, reading stops with an error\n"
            "exit status: 0 ok; 1 a read error (the report of what was readable comes first; a file\n"
            "that is no trace gets the error alone); 2 usage, or --at naming nothing in the traces;\n"
            "3 a --fail-on-* threshold was exceeded\n");
}

/* Shared with builtin-diff.c: parse the options common to report and diff.
 * Returns 1 if argv[*i] was consumed (with its value), 0 if not an option
 * of ours, -1 on a usage error. */
int vt_cli_common_option(int argc, char **argv, int *i, vt_analysis_config *cfg)
{
    const char *o = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(o, "--no-symbols")) {
        cfg->symbolize = 0;
        return 1;
    }
    if (!strcmp(o, "--no-symbol-cache")) {
        cfg->symbol_cache = 0;
        return 1;
    }
    if (!strcmp(o, "--native")) {
        cfg->native = 1;
        return 1;
    }
    if (!strcmp(o, "--no-progress")) {
        cfg->progress = 0;
        return 1;
    }
    if (!strcmp(o, "--max-memory")) { /* the analysis's one memory budget */
        uint64_t b;
        if (!v || vt_parse_bytes(v, &b) || b < (1u << 20)) {
            fprintf(stderr, "vramtrace %s: --max-memory needs a byte count of at least 1M (e.g. 4G)\n", argv[0]);
            return -1;
        }
        cfg->max_memory = b;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--at") || !strcmp(o, "--top") || !strcmp(o, "--frames") || !strcmp(o, "--sysroot") ||
        !strcmp(o, "--steps")) {
        if (!v) {
            fprintf(stderr, "vramtrace %s: %s needs a value\n", argv[0], o);
            return -1;
        }
        (*i)++;
        if (!strcmp(o, "--at")) {
            uint64_t ns;
            int prc = vt_parse_duration(v, &ns);
            if (!strcmp(v, "end")) {
                cfg->at_mode = VT_AT_END;
            } else if (!strcmp(v, "last-kernel")) {
                cfg->at_mode = VT_AT_AUTO;
            } else if (prc == 0) {
                cfg->at_mode = VT_AT_TIME;
                cfg->at_ns = ns;
            } else if (prc == VT_ERR_RANGE) {
                fprintf(stderr,
                        "vramtrace %s: --at %s: not a time: a number of seconds from the trace's start, at most "
                        "18446744073 s, with s, ms, us or ns (--at 6.5s, --at 300ms), or end, last-kernel, or an NVTX "
                        "mark's name\n",
                        argv[0], v);
                return -1;
            } else {
                cfg->at_mode = VT_AT_MARKER;
                cfg->at_marker = v;
            }
        } else if (!strcmp(o, "--sysroot")) {
            cfg->sysroot = v;
        } else if (!strcmp(o, "--steps")) {
            cfg->steps_name = v;
        } else {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n <= 0 || n > 100000) {
                fprintf(stderr, "vramtrace %s: %s: not a positive number: %s\n", argv[0], o, v);
                return -1;
            }
            if (!strcmp(o, "--top"))
                cfg->top = (unsigned)n;
            else
                cfg->max_frames = (unsigned)n;
        }
        return 1;
    }
    return 0;
}

/* Add a file or a directory; prints nothing (errors are kept in the analysis). */
int vt_cli_add_input(vt_analysis *a, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        int rc = vt_analysis_add_dir(a, path);
        if (rc == VT_ERR_NOT_FOUND && vt_analysis_nprocs(a) == 0) {
            char msg[600];
            snprintf(msg, sizeof(msg), "%s: no *.zst trace in this directory", path);
            vt_analysis_add_error(a, rc, msg); /* the error alone, no made-up process */
        }
        return rc;
    }
    return vt_analysis_add_file(a, path);
}

int cmd_report(int argc, char **argv)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.progress = 1;
    cfg.symbol_cache = 1;
    int json = 0, rc = 0, ninputs = 0;
    uint64_t fail_leak = 0, fail_growth = 0;
    int have_fail_leak = 0, have_fail_growth = 0;
    const char *html = NULL;
    char **inputs = calloc((size_t)argc + 1, sizeof(char *));
    vt_analysis *a = NULL;
    if (!inputs)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            report_usage(stdout);
            free(inputs);
            return 0;
        }
        if (!strcmp(o, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(o, "--html")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vramtrace report: --html needs a file name\n");
                rc = 2;
                goto cleanup;
            }
            html = argv[++i];
            continue;
        }
        if (!strcmp(o, "--fail-on-leak") || !strcmp(o, "--fail-on-growth")) {
            uint64_t b;
            if (i + 1 >= argc || vt_parse_bytes(argv[i + 1], &b)) {
                fprintf(stderr, "vramtrace report: %s needs a byte count (e.g. 100M)\n", o);
                rc = 2;
                goto cleanup;
            }
            if (!strcmp(o, "--fail-on-leak")) {
                fail_leak = b;
                have_fail_leak = 1;
            } else {
                fail_growth = b;
                have_fail_growth = 1;
            }
            i++;
            continue;
        }
        int k = vt_cli_common_option(argc, argv, &i, &cfg);
        if (k < 0) {
            rc = 2;
            goto cleanup;
        }
        if (k)
            continue;
        if (o[0] == '-' && o[1]) {
            fprintf(stderr, "vramtrace report: unknown option '%s'\n", o);
            report_usage(stderr);
            rc = 2;
            goto cleanup;
        }
        inputs[ninputs++] = argv[i];
    }
    if (!ninputs) {
        report_usage(stderr);
        rc = 2;
        goto cleanup;
    }
    if (vt_analysis_create(&a, &cfg)) {
        fprintf(stderr, "vramtrace report: out of memory\n");
        rc = 1;
        goto cleanup;
    }
    for (int i = 0; i < ninputs; i++)
        if (vt_cli_add_input(a, inputs[i]) == VT_ERR_NOMEM)
            break;
    if (vt_analysis_finish(a)) {
        fprintf(stderr, "vramtrace report: out of memory\n");
        rc = 1;
        goto cleanup;
    }
    char vmsg[1200];
    if (vt_analysis_view_missing(a, vmsg, sizeof(vmsg))) {
        fprintf(stderr, "vramtrace report: %s\n", vmsg);
        rc = 2;
        goto cleanup;
    }
    /* Nothing readable: the errors alone say it (no page, no made-up report;
     * JSON keeps its schema). */
    int nothing = vt_analysis_nprocs(a) == 0 && vt_analysis_nerrors(a) > 0;
    if (html && nothing)
        html = NULL;
    if (html) { /* the page; stdout says where it went (--json: the JSON as asked) */
        /* written beside and renamed: a link planted at FILE is replaced, never followed */
        vt_outfile of;
        int to_file = strcmp(html, "-") != 0;
        FILE *f = !to_file ? stdout : vt_outfile_open(&of, html, 1) ? NULL : of.f;
        int open_errno = f ? 0 : errno; /* why the file could not be made: "No such file or directory" */
        int hrc = f ? vt_report_html(a, inputs, ninputs, f) : VT_ERR_IO;
        if (f && to_file) {
            if (hrc)
                vt_outfile_abort(&of);
            else if (vt_outfile_commit(&of, 1)) {
                hrc = VT_ERR_IO;
                open_errno = errno; /* "Is a directory" */
            }
        }
        if (hrc) {
            if (hrc == VT_ERR_LIMIT) /* the page replays the traces a second time */
                fprintf(stderr,
                        "vramtrace report: %s: cannot write the page: its second pass over the traces would pass the "
                        "memory budget (--max-memory raises it)\n",
                        html);
            else
                fprintf(stderr, "vramtrace report: %s: cannot write the page: %s\n", html,
                        open_errno ? strerror(open_errno) : vt_strerror(hrc));
            rc = 1;
            goto cleanup;
        }
        if (!strcmp(html, "-"))
            json = -1; /* the page went to stdout */
        else if (!json) {
            /* one line, not the whole text report after it */
            printf("vramtrace report: the page is %s (open it in a browser; no --html for the text report)\n", html);
            json = -1;
        } else
            fprintf(stderr, "vramtrace report: wrote %s\n", html);
    }
    int empty = json < 0 || (!json && nothing);
    if (!empty && ((json ? vt_report_json(a, stdout) : vt_report_text(a, stdout)) || fflush(stdout))) {
        fprintf(stderr, "vramtrace report: cannot write the report\n");
        rc = 1;
        goto cleanup;
    }
    char eb[1200]; /* the errors name files: escaped (a name may hold ESC) */
    if (vt_analysis_nerrors(a)) {
        for (unsigned i = 0; i < vt_analysis_nerrors(a); i++)
            fprintf(stderr, "vramtrace report: %s\n", vt_esc_text_buf(vt_analysis_error(a, i), eb, sizeof(eb)));
        rc = 1;
        goto cleanup;
    }
    if (have_fail_leak && vt_analysis_leaked_bytes(a) > fail_leak) {
        char lb[32], fb[32];
        vt_fmt_bytes(lb, sizeof(lb), (double)vt_analysis_leaked_bytes(a));
        vt_fmt_bytes(fb, sizeof(fb), (double)fail_leak);
        fprintf(stderr, "vramtrace report: %s leaked (%llu bytes) exceed --fail-on-leak %s (%llu bytes)\n", lb,
                (unsigned long long)vt_analysis_leaked_bytes(a), fb, (unsigned long long)fail_leak);
        rc = 3;
    }
    if (have_fail_growth && vt_analysis_grown_bytes(a) > fail_growth) {
        char gb[32], fb[32];
        vt_fmt_bytes(gb, sizeof(gb), (double)vt_analysis_grown_bytes(a));
        vt_fmt_bytes(fb, sizeof(fb), (double)fail_growth);
        fprintf(stderr, "vramtrace report: %s of growth (%llu bytes) exceed --fail-on-growth %s (%llu bytes)\n", gb,
                (unsigned long long)vt_analysis_grown_bytes(a), fb, (unsigned long long)fail_growth);
        rc = 3;
    }
cleanup:
    vt_analysis_free(a);
    free(inputs);
    return rc;
}
