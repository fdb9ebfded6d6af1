/* vt_parquet.h - a small streaming Parquet writer (src/analyze), for the
 * Parquet export (vt_export_parquet.c, docs/EXPORT.md).  No Parquet
 * library is packaged for Debian 12; this writes what DuckDB, pyarrow,
 * Spark and hyparquet read:
 *   - a flat schema of columns, each INT32, INT64, TIMESTAMP(NANOS) on
 *     INT64, a UTF-8 string (BYTE_ARRAY, STRING), or a list of UTF-8
 *     strings (the three-level LIST of the spec); any column optional;
 *   - row groups of at most `rows_per_group` rows, written when full:
 *     memory is one row group of values (and its dictionaries);
 *   - one data page (v1) per column chunk: numbers DELTA_BINARY_PACKED
 *     when that takes at most half of PLAIN's bytes, else PLAIN, a chunk
 *     of one value a one-entry dictionary; strings RLE_DICTIONARY with a
 *     dictionary page per chunk; definition and
 *     repetition levels in the RLE/bit-packed hybrid; pages compressed with
 *     zstd; statistics (min, max, null count) per chunk with the
 *     type-defined column order;
 *   - the footer (FileMetaData) in Thrift's compact protocol
 *     (vt_parquet_thrift.c).
 * Strings that are not valid UTF-8 are written with U+FFFD in place of
 * each invalid byte.  Not thread-safe; one writer per file. */
#ifndef VT_PARQUET_H
#define VT_PARQUET_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    VT_PQ_INT32 = 0,
    VT_PQ_INT64 = 1,
    VT_PQ_TIMESTAMP = 2, /* ns since the epoch (UTC), INT64 with TIMESTAMP(NANOS, isAdjustedToUTC=false) */
    VT_PQ_STRING = 3,
    VT_PQ_STRING_LIST = 4,
} vt_pq_type;

typedef struct {
    const char *name; /* borrowed: must outlive the writer (string literals) */
    vt_pq_type type;
    int optional;     /* nulls allowed (a list column: the list itself may be null) */
} vt_pq_col;

typedef struct vt_pq vt_pq;

/* A writer of `path` (created; truncated if it exists) with the columns
 * cols[0..ncols) (copied).  rows_per_group 0: the default (64 Ki).
 * 0 or a vt_err (*out NULL). */
int vt_pq_create(vt_pq **out, const char *path, const vt_pq_col *cols, int ncols, uint32_t rows_per_group);

/* Compress with `zctx` (a ZSTD_CCtx *, borrowed: it must outlive the
 * writer) rather than a context of the writer's own, made at its first
 * page: writers used one after another share one (an export's tables). */
void vt_pq_share_zstd(vt_pq *w, void *zctx);

/* Values of the current row, one call per column in any order; a column
 * left out of a row is null (it must be optional).  Values of a wrong
 * type, or a null in a required column, make the writer fail (vt_pq_err). */
void vt_pq_int(vt_pq *w, int col, int64_t v);
void vt_pq_str(vt_pq *w, int col, const char *s);             /* NULL: null */
void vt_pq_strn(vt_pq *w, int col, const char *s, size_t n);
/* a list column: its items (n may be 0: an empty list) */
void vt_pq_list(vt_pq *w, int col, const char *const *items, uint32_t n);
/* Close the row; writes the row group when it is full.  0 or a vt_err. */
int vt_pq_row(vt_pq *w);

/* The first error (sticky), 0 if none. */
int vt_pq_err(const vt_pq *w);
uint64_t vt_pq_rows(const vt_pq *w);

/* Write the last row group and the footer, close the file.  0 or a
 * vt_err (then the file is incomplete: the caller removes it). */
int vt_pq_close(vt_pq *w);
/* Free (closes the file without a footer if vt_pq_close was not called).
 * NULL does nothing. */
void vt_pq_free(vt_pq *w);

#endif
