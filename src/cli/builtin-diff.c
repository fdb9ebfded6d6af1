/* builtin-diff.c - `vramtrace diff [options] A B`: compare two traces (or
 * two directories of traces) per call site.  Exit: 0 ok, 1 read error
 * (the comparison of what was readable is printed first), 2 usage.
 * Touches: the named traces (read), stdout, stderr. */
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "builtin.h"
#include "vt_escape.h"
#include "outfile.h"
#include "vt_analyze.h"
#include "vt_error.h"

int vt_cli_common_option(int argc, char **argv, int *i, vt_analysis_config *cfg);
int vt_cli_add_input(vt_analysis *a, const char *path);

static void diff_usage(FILE *f)
{
    fprintf(f, "usage: vramtrace diff [options] A B   (A, B: trace files or directories)\n"
               "  --json  --html FILE  --at TIME|MARKER|end  --top N  --frames N  --no-symbols  --sysroot DIR\n"
               "  --no-symbol-cache  --no-progress  --max-memory BYTES   (as for `vramtrace report`)\n"
               "  --fail-on-growth BYTES  exit 3 when B holds more than BYTES more than A at the view\n"
               "call sites are matched by their user frames and symbol names, never raw offsets.\n"
               "exit status: 0 ok; 1 a read error; 2 usage; 3 the --fail-on-growth threshold\n");
}

int cmd_diff(int argc, char **argv)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.progress = 1;
    cfg.symbol_cache = 1;
    int json = 0, n = 0, rc = 0;
    const char *html = NULL;
    uint64_t fail_growth = 0;
    int have_fail_growth = 0;
    const char *in[2] = {NULL, NULL};
    vt_analysis *an[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            diff_usage(stdout);
            return 0;
        }
        if (!strcmp(o, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(o, "--fail-on-growth")) {
            if (i + 1 >= argc || vt_parse_bytes(argv[i + 1], &fail_growth)) {
                fprintf(stderr, "vramtrace diff: --fail-on-growth needs a byte count (e.g. 100M)\n");
                return 2;
            }
            have_fail_growth = 1;
            i++;
            continue;
        }
        if (!strcmp(o, "--html")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vramtrace diff: --html needs a file name\n");
                return 2;
            }
            html = argv[++i];
            continue;
        }
        int k = vt_cli_common_option(argc, argv, &i, &cfg);
        if (k < 0)
            return 2;
        if (k)
            continue;
        if ((o[0] == '-' && o[1]) || n == 2) {
            fprintf(stderr, "vramtrace diff: unexpected argument '%s'\n", o);
            diff_usage(stderr);
            return 2;
        }
        in[n++] = o;
    }
    if (n != 2) {
        diff_usage(stderr);
        return 2;
    }
    for (int s = 0; s < 2; s++) {
        if (vt_analysis_create(&an[s], &cfg)) {
            rc = 1;
            goto cleanup;
        }
        vt_cli_add_input(an[s], in[s]);
        if (vt_analysis_finish(an[s])) {
            rc = 1;
            goto cleanup;
        }
    }
    for (int s = 0; s < 2; s++) {
        char vmsg[1200];
        if (vt_analysis_view_missing(an[s], vmsg, sizeof(vmsg))) {
            fprintf(stderr, "vramtrace diff: %s: %s\n", s ? "B" : "A", vmsg);
            rc = 2;
            goto cleanup;
        }
    }
    /* A side with nothing readable: its errors alone, no comparison with zero. */
    char eb[1200]; /* the errors name files: escaped (a name may hold ESC) */
    for (int s = 0; s < 2; s++)
        if (vt_analysis_nprocs(an[s]) == 0) {
            for (unsigned i = 0; i < vt_analysis_nerrors(an[s]); i++)
                fprintf(stderr, "vramtrace diff: %s\n", vt_esc_text_buf(vt_analysis_error(an[s], i), eb, sizeof(eb)));
            if (!vt_analysis_nerrors(an[s]))
                fprintf(stderr, "vramtrace diff: %s: %s: no trace could be read\n", s ? "B" : "A", in[s]);
            rc = 1;
        }
    if (rc)
        goto cleanup;
    if (html) {
        vt_outfile of; /* written beside and renamed: a link at FILE is not followed */
        FILE *f = vt_outfile_open(&of, html, 1) ? NULL : of.f;
        int open_errno = f ? 0 : errno;
        int hrc = f ? vt_diff_html(an[0], an[1], f) : VT_ERR_IO;
        if (f) {
            if (hrc)
                vt_outfile_abort(&of);
            else if (vt_outfile_commit(&of, 1)) {
                hrc = VT_ERR_IO;
                open_errno = errno; /* "Is a directory" */
            }
        }
        if (hrc) {
            fprintf(stderr, "vramtrace diff: %s: cannot write the page: %s\n", html,
                    open_errno ? strerror(open_errno) : vt_strerror(hrc));
            rc = 1;
            goto cleanup;
        }
        if (!json) /* one line, as report --html: not the whole text after it */
            printf("vramtrace diff: the page is %s (open it in a browser; no --html for the text)\n", html);
        else
            fprintf(stderr, "vramtrace diff: wrote %s\n", html);
    }
    if (!json && !html) { /* which is which, before the numbers */
        char e0[1200], e1[1200];
        printf("A: %s\nB: %s\n", vt_esc_text_buf(in[0], e0, sizeof(e0)), vt_esc_text_buf(in[1], e1, sizeof(e1)));
    }
    if (!(html && !json) &&
        ((json ? vt_diff_json(an[0], an[1], stdout) : vt_diff_text(an[0], an[1], stdout)) || fflush(stdout))) {
        fprintf(stderr, "vramtrace diff: cannot write the output\n");
        rc = 1;
        goto cleanup;
    }
    for (int s = 0; s < 2; s++)
        for (unsigned i = 0; i < vt_analysis_nerrors(an[s]); i++) {
            fprintf(stderr, "vramtrace diff: %s\n", vt_esc_text_buf(vt_analysis_error(an[s], i), eb, sizeof(eb)));
            rc = 1;
        }
    if (!rc && have_fail_growth) {
        uint64_t la = vt_analysis_leaked_bytes(an[0]), lb = vt_analysis_leaked_bytes(an[1]);
        if (lb > la && lb - la > fail_growth) {
            fprintf(stderr, "vramtrace diff: B holds %llu bytes more than A at the view, over --fail-on-growth %llu\n",
                    (unsigned long long)(lb - la), (unsigned long long)fail_growth);
            rc = 3;
        }
    }
cleanup:
    vt_analysis_free(an[0]);
    vt_analysis_free(an[1]);
    return rc;
}
