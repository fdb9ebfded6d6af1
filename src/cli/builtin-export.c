/* builtin-export.c - `vramtrace export --format perfetto|chrome|memory-viz|parquet
 * [-o FILE] [options] TRACE|DIR...`: the traces in the formats of the tools
 * people already have open (docs/EXPORT.md).  A directory exports every
 * process of the job into one file (parquet: a directory of tables, a file
 * per trace).  Exit: 0 ok, 1 a damaged or truncated
 * trace (everything readable was exported; where it stopped is on stderr),
 * 2 usage, 1 when nothing could be written (the reason on stderr).
 * Touches: the named traces (read), the output file or stdout, stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "outfile.h"
#include "vt_error.h"
#include "vt_export.h"

int vt_cli_common_option(int argc, char **argv, int *i, vt_analysis_config *cfg);

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: vramtrace export --format perfetto|chrome|memory-viz|parquet [options] TRACE|DIR...\n"
            "  --format F           perfetto: ui.perfetto.dev (protobuf trace);\n"
            "                       chrome: chrome://tracing, Perfetto (JSON);\n"
            "                       memory-viz: PyTorch's memory snapshot (pickle) for\n"
            "                       pytorch.org/memory_viz and torch.cuda._memory_viz;\n"
            "                       parquet: a directory of tables (DuckDB, Spark, pandas),\n"
            "                       one file per trace and table, partitioned by rank and host\n"
            "  -o, --output FILE    where to write (- = stdout; default: the first trace's\n"
            "                       name with .perfetto-trace, .json, .pickle or .parquet;\n"
            "                       parquet: a directory, added to)\n"
            "  --at TIME|MARKER     the leak view, as for `vramtrace report` (memory-viz:\n"
            "                       the segments are those live then)\n"
            "  --start TIME         leave out what happened before TIME after each trace's start\n"
            "  --end TIME           leave out what happened after TIME after each trace's start\n"
            "  --allocations        every block's lifetime as a slice (default: only blocks\n"
            "                       live at the view and those of growing call sites)\n"
            "  --max-points N       counter points per track: min, max and last of N/3 time\n"
            "                       buckets (default 100000)\n"
            "  --max-bytes BYTES    chrome: refuse to write more than BYTES of JSON (default\n"
            "                       256M: what a browser still opens)\n"
            "  --no-symbols         do not read binaries to symbolize native frames\n"
            "  --no-symbol-cache    read them even where the symbol cache has the address\n"
            "  --sysroot DIR        look for the traced binaries under DIR\n"
            "  --no-progress        never print progress on stderr\n"
            "  --max-memory BYTES   one budget for the export (default 1G): both passes over the\n"
            "                       traces and the writer's names, frames and stacks\n");
}

static const char *suffix(vt_export_format f)
{
    return f == VT_EXPORT_PERFETTO  ? ".perfetto-trace"
           : f == VT_EXPORT_CHROME  ? ".json"
           : f == VT_EXPORT_PARQUET ? ".parquet"
                                    : ".pickle";
}

/* TRACE.zst -> TRACE.perfetto-trace; DIR -> DIR.perfetto-trace */
static void default_name(const char *in, vt_export_format f, char *buf, size_t len)
{
    size_t n = strlen(in);
    while (n > 1 && in[n - 1] == '/')
        n--;
    if (n > 4 && !strncmp(in + n - 4, ".zst", 4))
        n -= 4;
    snprintf(buf, len, "%.*s%s", (int)n, in, suffix(f));
}

int cmd_export(int argc, char **argv)
{
    vt_export_config cfg;
    vt_export_config_default(&cfg);
    cfg.analysis.progress = 1;
    cfg.analysis.symbol_cache = 1;
    const char *out_path = NULL;
    int have_format = 0;
    char **inputs = calloc((size_t)argc, sizeof(char *));
    int ninputs = 0;
    if (!inputs)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            export_usage(stdout);
            free(inputs);
            return 0;
        }
        if (!strcmp(o, "--format") || !strcmp(o, "-o") || !strcmp(o, "--output") || !strcmp(o, "--start") ||
            !strcmp(o, "--end") || !strcmp(o, "--max-points") || !strcmp(o, "--max-bytes")) {
            if (!v) {
                fprintf(stderr, "vramtrace export: %s needs a value\n", o);
                free(inputs);
                return 2;
            }
            i++;
            if (!strcmp(o, "--format")) {
                have_format = 1;
                if (!strcmp(v, "perfetto"))
                    cfg.format = VT_EXPORT_PERFETTO;
                else if (!strcmp(v, "chrome"))
                    cfg.format = VT_EXPORT_CHROME;
                else if (!strcmp(v, "memory-viz") || !strcmp(v, "memviz"))
                    cfg.format = VT_EXPORT_MEMVIZ;
                else if (!strcmp(v, "parquet"))
                    cfg.format = VT_EXPORT_PARQUET;
                else {
                    fprintf(stderr, "vramtrace export: unknown format '%s' (perfetto, chrome, memory-viz, parquet)\n", v);
                    free(inputs);
                    return 2;
                }
            } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
                out_path = v;
            } else if (!strcmp(o, "--max-bytes")) {
                uint64_t b;
                if (vt_parse_bytes(v, &b) || !b) {
                    fprintf(stderr, "vramtrace export: --max-bytes wants a size (256M), not '%s'\n", v);
                    free(inputs);
                    return 2;
                }
                cfg.max_bytes = b;
            } else if (!strcmp(o, "--max-points")) {
                char *end;
                unsigned long long n = strtoull(v, &end, 10);
                if (*end || n < 3) {
                    fprintf(stderr, "vramtrace export: --max-points wants a number of at least 3, not '%s'\n", v);
                    free(inputs);
                    return 2;
                }
                cfg.max_points = n;
            } else {
                uint64_t ns;
                if (vt_parse_duration(v, &ns)) {
                    fprintf(stderr, "vramtrace export: %s wants a time (1.5s, 200ms), not '%s'\n", o, v);
                    free(inputs);
                    return 2;
                }
                if (!strcmp(o, "--start")) {
                    cfg.have_start = 1;
                    cfg.start_ns = ns;
                } else {
                    cfg.have_end = 1;
                    cfg.end_ns = ns;
                }
            }
            continue;
        }
        if (!strcmp(o, "--allocations")) {
            cfg.allocations = 1;
            continue;
        }
        int k = vt_cli_common_option(argc, argv, &i, &cfg.analysis);
        if (k < 0) {
            free(inputs);
            return 2;
        }
        if (k > 0)
            continue;
        if (o[0] == '-' && o[1]) {
            fprintf(stderr, "vramtrace export: unknown option %s\n", o);
            export_usage(stderr);
            free(inputs);
            return 2;
        }
        inputs[ninputs++] = argv[i];
    }
    if (!have_format || !ninputs) {
        fprintf(stderr, "vramtrace export: %s\n", !have_format ? "--format is needed" : "no trace given");
        export_usage(stderr);
        free(inputs);
        return 2;
    }
    if (cfg.have_start && cfg.have_end && cfg.end_ns <= cfg.start_ns) {
        fprintf(stderr, "vramtrace export: --end must come after --start\n");
        free(inputs);
        return 2;
    }
    char name[4096];
    int named = out_path != NULL; /* -o names it: what is there is replaced */
    if (!out_path) {
        default_name(inputs[0], cfg.format, name, sizeof(name));
        out_path = name;
    }
    if (cfg.format == VT_EXPORT_PARQUET) { /* a directory, one file per trace and table */
        char err[512] = "";
        if (!strcmp(out_path, "-")) {
            fprintf(stderr, "vramtrace export: parquet writes a directory: -o DIR\n");
            free(inputs);
            return 2;
        }
        int rc = vt_export_parquet(&cfg, inputs, ninputs, out_path, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "vramtrace export: %s\n", err[0] ? err : vt_strerror(rc));
        else
            fprintf(stderr, "vramtrace export: wrote %s\n", out_path);
        free(inputs);
        return rc ? 1 : 0;
    }
    int to_stdout = !strcmp(out_path, "-");
    vt_outfile of;
    FILE *out = stdout;
    if (!to_stdout) {
        if (vt_outfile_open(&of, out_path, named)) {
            if (errno == EEXIST)
                fprintf(stderr, "vramtrace export: %s exists: not replaced (name it with -o to replace it)\n", out_path);
            else
                fprintf(stderr, "vramtrace export: %s: cannot write: %s\n", out_path, strerror(errno));
            free(inputs);
            return 1;
        }
        out = of.f;
    }
    char err[512] = "";
    /* this command writes from one thread: no stdio lock per character */
    __fsetlocking(out, FSETLOCKING_BYCALLER);
    int rc = vt_export(&cfg, inputs, ninputs, out, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "vramtrace export: %s\n", err[0] ? err : vt_strerror(rc));
        if (!to_stdout)
            vt_outfile_abort(&of); /* nothing usable: what was there stays */
        free(inputs);
        return 1;
    }
    if (!to_stdout && vt_outfile_commit(&of, named)) {
        fprintf(stderr, "vramtrace export: %s: %s\n", out_path,
                errno == EEXIST ? "appeared meanwhile: not replaced" : strerror(errno));
        free(inputs);
        return 1;
    }
    if (!to_stdout)
        fprintf(stderr, "vramtrace export: wrote %s\n", out_path);
    free(inputs);
    return rc ? 1 : 0;
}
