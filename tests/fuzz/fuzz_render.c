/* fuzz_render.c - libFuzzer target for the renderers fed from decoded
 * events: dump (text and JSON, with stacks), the text, JSON and HTML
 * reports, and diff (text, JSON, HTML) of the trace's first half against
 * it (one group of these per input, below).
 * The input is the decompressed record stream (docs/FORMAT.md, "entry
 * entry ..."), wrapped here into one zstd frame with its checksum, so
 * that the fuzzer mutates records and their values (times, sizes, names,
 * ids), not compressed bytes that fail the checksum; an input that is
 * already a zstd file (the shared corpus) goes in as it is.  The seeds of
 * its own are decompressed traces (tests/fuzz/corpus-render/).  Every
 * output goes to /dev/null; a renderer must never crash, hang, leak, or
 * overflow a buffer (dump's time column did, issue 36).  Must be run with
 * -close_fd_mask=2: the analyzer names every read error on stderr.
 * tests/fuzz/replay.c replays the corpus through it in every ctest run. */
#define _GNU_SOURCE /* memfd_create (fuzz_input.h) */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "builtin.h"
#include "fuzz_input.h"
#include "vt_analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the input as a trace file: a zstd file as it is, else one frame of it */
static const uint8_t *as_trace(const uint8_t *data, size_t *size)
{
    static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    static ZSTD_CCtx *cctx;
    static uint8_t *buf;
    static size_t cap;
    if (*size >= 4 && !memcmp(data, magic, 4))
        return data;
    if (!cctx) {
        cctx = ZSTD_createCCtx();
        if (!cctx)
            __builtin_trap();
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    }
    size_t need = ZSTD_compressBound(*size);
    if (need > cap) {
        free(buf);
        cap = need;
        buf = malloc(cap);
        if (!buf)
            __builtin_trap();
    }
    size_t n = ZSTD_compress2(cctx, buf, cap, data, *size);
    if (ZSTD_isError(n))
        __builtin_trap();
    *size = n;
    return buf;
}

static vt_analysis *analyze(const char *path)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    cfg.progress = 0;
    cfg.top = 8;
    vt_analysis *a;
    if (vt_analysis_create(&a, &cfg))
        return NULL;
    vt_analysis_add_file(a, path);
    if (vt_analysis_finish(a)) {
        vt_analysis_free(a);
        return NULL;
    }
    return a;
}

/* One of four groups per input, by its size, so that each run costs about
 * one analysis (every group is reached: the fuzzer varies sizes):
 *   0 dump, text and JSON, with stacks;
 *   1 the text and JSON reports;
 *   2 the HTML report (its second replay: timelines, histograms);
 *   3 diff, text, JSON and HTML, of the trace's first half against it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *null;
    const unsigned group = (unsigned)(size % 4);
    size_t n = size;
    const uint8_t *t = as_trace(data, &n);
    const char *path = fuzz_input_file(t, n, &null);

    if (group == 0) {
        vt_dump_file(null, path, 0, 1);
        vt_dump_file(null, path, 1, 1);
        fflush(null);
        return 0;
    }
    vt_analysis *a = analyze(path);
    if (!a)
        return 0;
    if (group == 1) {
        vt_report_text(a, null);
        vt_report_json(a, null);
    } else if (group == 2) {
        char *inputs[] = {(char *)path};
        vt_report_html(a, inputs, 1, null);
    } else {
        size_t h = size / 2; /* the first half: call sites gone, changed, new */
        const uint8_t *th = as_trace(data, &h);
        path = fuzz_input_file(th, h, &null);
        vt_analysis *b = analyze(path);
        if (b) {
            vt_diff_text(b, a, null);
            vt_diff_json(b, a, null);
            vt_diff_html(b, a, null);
            vt_analysis_free(b);
        }
    }
    vt_analysis_free(a);
    fflush(null);
    return 0;
}
