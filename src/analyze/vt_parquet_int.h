/* vt_parquet_int.h - the Parquet writer's structures, shared by its two
 * rooms: vt_parquet.c (values, encodings, pages) and vt_parquet_thrift.c
 * (Thrift's compact protocol, the footer).  Not a public interface. */
#ifndef VT_PARQUET_INT_H
#define VT_PARQUET_INT_H

#include <stdint.h>
#include <stdio.h>
#include <zstd.h>

#include "vt_parquet.h"

/* ---- the Thrift compact protocol (vt_parquet_thrift.c) ---- */
#define PQ_SEEN 64 /* pq_column.seen: a power of two */
typedef struct {
    uint8_t *b;
    size_t n, cap;
    int err;
    int16_t last[16]; /* the last field id of each open struct */
    int depth;
} vt_tw;

#define PQ_DEFAULT_ROWS (64u << 10)
#define PQ_STAT_MAX 64 /* string min/max longer than this are left out of the statistics */
#define PQ_ZSTD_LEVEL 1

typedef struct {
    int64_t data_off, dict_off, num_values, unc, comp;
    uint64_t nulls;
    int has_dict, have_stats;
    int delta; /* the values DELTA_BINARY_PACKED */
    uint8_t nmin, nmax;
    uint8_t min[PQ_STAT_MAX], max[PQ_STAT_MAX];
} pq_chunk;

typedef struct {
    vt_pq_col c;
    int max_def, max_rep;
    uint8_t *def, *rep;
    size_t nlev, caplev, caprep;
    int64_t *iv;
    size_t niv, capiv;
    uint32_t *ix; /* dictionary indices of the values */
    size_t nix, capix;
    uint8_t *db; /* the dictionary, PLAIN: a 4-byte length, the bytes */
    size_t dbn, dbcap;
    uint32_t *doff; /* each entry's offset in db */
    uint64_t *dhash;
    size_t nd, capd, capdh;
    uint32_t *ht; /* open addressing: entry + 1 */
    size_t hcap;
    /* strings given before, by their address: the same literal (a kind, an
     * API) or the same interned string of the reader (a kernel's name)
     * again skips the hash and the UTF-8 check; the bytes are still compared
     * (an address can be reused for other bytes) */
    struct { const char *s; size_t n; uint32_t e; } seen[PQ_SEEN];
    uint64_t nulls;
    pq_chunk *ch;
    size_t nch, capch;
} pq_column;

typedef struct {
    int64_t rows, unc, comp;
} pq_group;

struct vt_pq {
    FILE *f;
    int64_t off;
    int err;
    uint32_t rpg;
    uint64_t rows_total;
    uint32_t rows; /* in the open row group */
    pq_column *cols;
    int ncols;
    uint64_t set;      /* bit k: column k has a value in the open row */
    uint64_t required; /* bit k: column k is not optional */
    uint64_t strs;     /* bit k: column k holds strings */
    pq_group *groups;
    size_t ngroups, capgroups;
    ZSTD_CCtx *zc; /* NULL until the first page, or shared (vt_pq_share_zstd) */
    int own_zc;
    uint8_t *page, *zbuf, *utf;
    size_t npage, cappage, capzbuf, caputf;
    vt_tw tw;
};

static inline int is_str(const pq_column *c)
{
    return c->c.type == VT_PQ_STRING || c->c.type == VT_PQ_STRING_LIST;
}

enum { VT_TT_BOOL_TRUE = 1, VT_TT_BOOL_FALSE = 2, VT_TT_BYTE = 3, VT_TT_I16 = 4, VT_TT_I32 = 5, VT_TT_I64 = 6,
       VT_TT_DOUBLE = 7, VT_TT_BINARY = 8, VT_TT_LIST = 9, VT_TT_STRUCT = 12 };

void vt_tw_reset(vt_tw *t);
void vt_tw_free(vt_tw *t);
void vt_tw_field(vt_tw *t, int id, int type);           /* a field header (then its value) */
void vt_tw_i32(vt_tw *t, int id, int32_t v);            /* field + value */
void vt_tw_i64(vt_tw *t, int id, int64_t v);
void vt_tw_bool(vt_tw *t, int id, int v);
void vt_tw_bin(vt_tw *t, int id, const void *p, size_t n);
void vt_tw_list(vt_tw *t, int id, int elemtype, uint32_t n); /* field + list header */
void vt_tw_list_bare(vt_tw *t, int elemtype, uint32_t n);    /* a list's header alone (nested) */
void vt_tw_val_i32(vt_tw *t, int32_t v);                /* an element of a list */
void vt_tw_val_bin(vt_tw *t, const void *p, size_t n);
void vt_tw_begin(vt_tw *t, int id);                     /* field id: a struct; 0: a list element struct */
void vt_tw_end(vt_tw *t);                               /* the struct's stop */
void vt_tw_varint(vt_tw *t, uint64_t v);

/* Write n bytes at the file's end: 0, or the writer's error (sticky). */
int vt_pq_file_put(vt_pq *w, const void *p, size_t n);
/* The footer (FileMetaData), its length and the closing magic. */
int vt_pq_footer_write(vt_pq *w);

#endif
