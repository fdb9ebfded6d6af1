/* fuzz_export.c - libFuzzer target for the exporters fed from decoded
 * events: any bytes as a trace file through vt_export (Perfetto, Chrome,
 * memory_viz) and vt_export_parquet (a directory in $TMPDIR, removed
 * after), each of which replays the file with its consumer.  The
 * libFuzzer binary (VT_FUZZ_ONE_EXPORTER) runs one exporter per input,
 * chosen by the input's size modulo 4, so that a run costs one export
 * rather than four and every exporter sees every kind of input; the ctest
 * replay (tests/fuzz/replay.c) runs all four on every file.  Symbolization
 * is off.  Must never crash, hang or leak; run it with -close_fd_mask=2. */
#define _GNU_SOURCE /* memfd_create (fuzz_input.h), nftw */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "vt_analyze.h"
#include "vt_export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (flag == FTW_DP)
        rmdir(p);
    else
        unlink(p);
    return 0;
}

static void export_one(const char *path, FILE *null, vt_export_format f)
{
    vt_export_config ec;
    vt_export_config_default(&ec);
    ec.format = f;
    vt_analysis_config_default(&ec.analysis);
    ec.analysis.symbolize = 0;
    ec.analysis.progress = 0;
    ec.max_points = 64;
    char err[256];
    char *inputs[1] = {(char *)path};
    if (f == VT_EXPORT_PARQUET) {
        char dir[512];
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/vt-fuzz-parquet-%d", tmp ? tmp : "/tmp", (int)getpid());
        vt_export_parquet(&ec, inputs, 1, dir, err, sizeof(err));
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return;
    }
    vt_export(&ec, inputs, 1, null, err, sizeof(err));
    fflush(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) { /* memory-viz's spool files and parquet's tables in memory, not on the disk ($TMPDIR) */
        once = 1;
        if (!getenv("TMPDIR"))
            setenv("TMPDIR", fuzz_tmpfs(), 1);
    }
    FILE *null;
    const char *path = fuzz_input_file(data, size, &null);
#ifdef VT_FUZZ_ONE_EXPORTER
    export_one(path, null, (vt_export_format)(VT_EXPORT_PERFETTO + (int)(size % 4)));
#else
    for (int f = VT_EXPORT_PERFETTO; f <= VT_EXPORT_PARQUET; f++)
        export_one(path, null, (vt_export_format)f);
#endif
    return 0;
}
