/* vt_export.h - `vramtrace export`: traces into the formats of the tools
 * people already have open (docs/EXPORT.md):
 *   VT_EXPORT_PERFETTO  Perfetto's native protobuf trace (ui.perfetto.dev)
 *   VT_EXPORT_CHROME    Chrome's JSON trace (chrome://tracing, Perfetto)
 *   VT_EXPORT_MEMVIZ    PyTorch's memory snapshot pickle (memory_viz)
 *   VT_EXPORT_PARQUET   tables of a partitioned Parquet dataset (DuckDB,
 *                       Spark, pandas), one file per trace and table
 *
 * Two passes over the inputs: the report's analysis first (view time,
 * peaks, growing call sites, steps, failed allocations), then the replay
 * again with a consumer (vt_analysis_set_consumer) that writes as the
 * events come.  Memory: the live blocks and the call sites, never the
 * events.  Output is deterministic: the same traces give the same bytes. */
#ifndef VT_EXPORT_H
#define VT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "vt_analyze.h"

typedef enum { VT_EXPORT_PERFETTO = 0, VT_EXPORT_CHROME = 1, VT_EXPORT_MEMVIZ = 2, VT_EXPORT_PARQUET = 3 } vt_export_format;

typedef struct {
    vt_export_format format;
    vt_analysis_config analysis; /* --at, --no-symbols, --sysroot, progress */
    int have_start, have_end;    /* --start / --end: ns after each trace's start */
    uint64_t start_ns, end_ns;
    int allocations;             /* every block as a slice (else: live at the view or growing) */
    uint64_t max_points;         /* counter points per track (min and max per bucket); 0 = default */
    uint64_t max_bytes;          /* chrome: refuse past this many bytes of JSON; 0 = default */
} vt_export_config;

#define VT_EXPORT_MAX_POINTS_DEFAULT 100000ull
#define VT_EXPORT_CHROME_MAX_BYTES_DEFAULT (256ull << 20)

void vt_export_config_default(vt_export_config *cfg);

/* Export the traces (files or directories, each process its own) into out.
 * Returns 0; 1 when an input was damaged or truncated (everything readable
 * was exported, the errors are on stderr with file and offset); or a
 * negative vt_err with a message in err (nothing usable written). */
int vt_export(const vt_export_config *cfg, char *const *inputs, int ninputs, FILE *out, char *err, size_t errlen);

/* Parquet: each trace (a file, or every trace of a directory) exported on
 * its own, one after the other, into DIR/TABLE/rank=R/host=H/part-STEM.parquet
 * (made; files of the same trace replaced).  Memory: one trace's analysis
 * and a row group per table.  Returns 0, 1 when an input was damaged (what
 * was readable was exported), or a negative vt_err with a message in err. */
int vt_export_parquet(const vt_export_config *cfg, char *const *inputs, int ninputs, const char *dir, char *err,
                      size_t errlen);

#endif
