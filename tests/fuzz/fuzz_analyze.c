/* fuzz_analyze.c - libFuzzer target for the analysis fed from decoded
 * events: any bytes as a trace file through the analyzer's replay
 * (vt_analysis_add_file), then the text and JSON reports (the exporters
 * have their own target, fuzz_export.c).  Symbolization is off (the input
 * names module paths).  Must
 * never crash, hang or leak.  Run it with -close_fd_mask=2: the
 * analyzer names every read error on stderr.  tests/fuzz/replay.c replays
 * the corpus through it in every ctest run. */
#define _GNU_SOURCE /* memfd_create (fuzz_input.h) */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "vt_analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *null;
    const char *path = fuzz_input_file(data, size, &null);

    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    cfg.progress = 0;
    vt_analysis *a;
    if (vt_analysis_create(&a, &cfg) == 0) {
        int arc = vt_analysis_add_file(a, path);
        if (getenv("VT_FUZZ_VERBOSE"))
            fprintf(stderr, "fuzz_analyze: %zu bytes: add_file %d, %u processes\n", size, arc, vt_analysis_nprocs(a));
        if (vt_analysis_finish(a) == 0) {
            vt_report_text(a, null);
            vt_report_json(a, null);
        }
        vt_analysis_free(a);
    }
    fflush(null);
    return 0;
}
