/* vt_parquet.c - the Parquet writer (vt_parquet.h): columns of one row
 * group in memory, then each column chunk written as an optional
 * dictionary page and one data page, zstd-compressed; the footer at close.
 * A number column whose chunk holds one value (a pid, a device) is written
 * as a dictionary of that value and one RLE run: zstd never sees it.
 *
 * Levels: a required flat column has none; an optional one has definition
 * levels (0 null, 1 value); a list column has repetition levels (0 the
 * first entry of a row, 1 the next items) and definition levels (null
 * list 0, empty list `base`, an item base + 1, base = 1 if the list is
 * optional).  Levels are written as RLE runs of the hybrid encoding,
 * dictionary indices as one bit-packed run (zstd takes the rest).
 * Touches: the file it writes. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "vt_error.h"
#include "vt_grow.h"
#include "vt_hash.h"
#include "vt_parquet_int.h"


int vt_pq_create(vt_pq **out, const char *path, const vt_pq_col *cols, int ncols, uint32_t rows_per_group)
{
    *out = NULL;
    if (ncols <= 0 || ncols > 64) /* the row's columns are bits of a word */
        return VT_ERR_INVALID;
    vt_pq *w = calloc(1, sizeof(*w));
    if (!w)
        return VT_ERR_NOMEM;
    w->rpg = rows_per_group ? rows_per_group : PQ_DEFAULT_ROWS;
    w->cols = calloc((size_t)ncols, sizeof(pq_column));
    if (!w->cols) {
        vt_pq_free(w);
        return VT_ERR_NOMEM;
    }
    w->ncols = ncols;
    for (int k = 0; k < ncols; k++) {
        pq_column *c = &w->cols[k];
        c->c = cols[k];
        if (c->c.type == VT_PQ_STRING_LIST) {
            c->max_rep = 1;
            c->max_def = c->c.optional ? 2 : 1;
        } else {
            c->max_def = c->c.optional ? 1 : 0;
        }
        if (!c->c.optional)
            w->required |= 1ull << k;
        if (is_str(c))
            w->strs |= 1ull << k;
    }
    w->f = fopen(path, "wb");
    if (!w->f) {
        vt_pq_free(w);
        return VT_ERR_IO;
    }
    if (fwrite("PAR1", 1, 4, w->f) != 4) {
        vt_pq_free(w);
        return VT_ERR_IO;
    }
    w->off = 4;
    *out = w;
    return 0;
}

void vt_pq_share_zstd(vt_pq *w, void *zctx)
{
    if (w->own_zc)
        ZSTD_freeCCtx(w->zc);
    w->zc = zctx;
    w->own_zc = 0;
}

int vt_pq_err(const vt_pq *w)
{
    return w->err;
}
uint64_t vt_pq_rows(const vt_pq *w)
{
    return w->rows_total;
}

/* ------------------------------------------------------------ values */

static void lev(vt_pq *w, pq_column *c, int def, int rep)
{
    if (c->max_def) {
        if (VT_GROW(c->def, c->nlev, c->caplev, 1024)) {
            w->err = VT_ERR_NOMEM;
            return;
        }
        c->def[c->nlev] = (uint8_t)def;
    }
    if (c->max_rep) {
        if (VT_GROW(c->rep, c->nlev, c->caprep, 1024)) {
            w->err = VT_ERR_NOMEM;
            return;
        }
        c->rep[c->nlev] = (uint8_t)rep;
    }
    c->nlev++;
}

static pq_column *col_for(vt_pq *w, int col, int want_str)
{
    if (w->err)
        return NULL;
    if (col < 0 || col >= w->ncols) {
        w->err = VT_ERR_INVALID;
        return NULL;
    }
    const uint64_t bit = 1ull << col;
    if ((w->set & bit) || !(w->strs & bit) != !want_str) {
        w->err = VT_ERR_INVALID;
        return NULL;
    }
    w->set |= bit;
    return &w->cols[col];
}

/* A flat column has one entry per row: its values and levels grow
 * together, doubling from 1024 rows up to a row group, so that a small
 * file does not pay for a row group's 64 K rows in every int column. */
static int flat_room(vt_pq *w, pq_column *c)
{
    if (VT_GROW(c->iv, c->niv, c->capiv, 1024) || (c->max_def && VT_GROW(c->def, c->nlev, c->caplev, 1024)))
        return w->err = VT_ERR_NOMEM;
    return 0;
}

/* The hot path of the export (a value per column per row): one test of
 * the error, the column, its type and whether the row has it already (the
 * column's bit in `set` or `strs`); the chunk's minimum and maximum are
 * found when it is written (chunk_write), in one pass over the values. */
void vt_pq_int(vt_pq *w, int col, int64_t v)
{
    const uint64_t bit = 1ull << (col & 63);
    if (__builtin_expect(w->err || (unsigned)col >= (unsigned)w->ncols || ((w->set | w->strs) & bit), 0)) {
        w->err = w->err ? w->err : VT_ERR_INVALID;
        return;
    }
    pq_column *c = &w->cols[col];
    if (__builtin_expect(c->niv >= c->capiv || (c->max_def && c->nlev >= c->caplev), 0) && flat_room(w, c))
        return;
    w->set |= bit;
    if (c->c.type == VT_PQ_INT32)
        v = (int32_t)v;
    c->iv[c->niv++] = v;
    if (c->max_def)
        c->def[c->nlev] = 1;
    c->nlev++;
}

/* Valid UTF-8 as is; otherwise a copy with U+FFFD for each invalid byte
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static const char *utf8_clean(vt_pq *w, const char *s, size_t *n)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t len = *n, i = 0;
    for (; i < len; i++)
        if (p[i] >= 0x80)
            break;
    if (i == len)
        return s;
    /* at most 3 bytes out per byte in */
    if (len * 3 + 1 > w->caputf) {
        uint8_t *u = realloc(w->utf, len * 3 + 1);
        if (!u) {
            w->err = VT_ERR_NOMEM;
            return NULL;
        }
        w->utf = u;
        w->caputf = len * 3 + 1;
    }
    uint8_t *o = w->utf;
    size_t m = 0;
    memcpy(o, p, i);
    m = i;
    while (i < len) {
        uint8_t b = p[i];
        size_t need = b < 0x80             ? 0
                      : (b & 0xE0) == 0xC0 ? 1
                      : (b & 0xF0) == 0xE0 ? 2
                      : (b & 0xF8) == 0xF0 ? 3
                                           : 9;
        int ok = need != 9;
        for (size_t k = 1; ok && k <= need; k++)
            if (i + k >= len || (p[i + k] & 0xC0) != 0x80)
                ok = 0;
        if (ok && need) {
            uint32_t cp = need == 1 ? (b & 0x1Fu) : need == 2 ? (b & 0x0Fu) : (b & 0x07u);
            for (size_t k = 1; k <= need; k++)
                cp = cp << 6 | (p[i + k] & 0x3Fu);
            if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
                cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                ok = 0;
        }
        if (!ok) {
            o[m++] = 0xEF;
            o[m++] = 0xBF;
            o[m++] = 0xBD;
            i++;
            continue;
        }
        memcpy(o + m, p + i, need + 1);
        m += need + 1;
        i += need + 1;
    }
    *n = m;
    return (const char *)o;
}

/* The dictionary entry of s (added when new): its index, or -1. */
static int64_t dict_add(vt_pq *w, pq_column *c, const char *s, size_t n)
{
    s = utf8_clean(w, s, &n);
    if (!s || n > INT32_MAX)
        return w->err = w->err ? w->err : VT_ERR_TOO_LARGE, -1;
    if (c->nd * 2 >= c->hcap) { /* rehash at half full */
        size_t nc = c->hcap ? c->hcap * 2 : 1024;
        uint32_t *t = calloc(nc, sizeof(uint32_t));
        if (!t)
            return w->err = VT_ERR_NOMEM, -1;
        for (size_t k = 0; k < c->nd; k++) {
            size_t j = (size_t)c->dhash[k] & (nc - 1);
            while (t[j])
                j = (j + 1) & (nc - 1);
            t[j] = (uint32_t)k + 1;
        }
        free(c->ht);
        c->ht = t;
        c->hcap = nc;
    }
    uint64_t h = vt_hash_bytes(s, n);
    size_t j = (size_t)h & (c->hcap - 1);
    while (c->ht[j]) {
        uint32_t e = c->ht[j] - 1;
        if (c->dhash[e] == h) {
            uint32_t len;
            memcpy(&len, c->db + c->doff[e], 4);
            if (len == n && !memcmp(c->db + c->doff[e] + 4, s, n))
                return e;
        }
        j = (j + 1) & (c->hcap - 1);
    }
    if (VT_GROW(c->doff, c->nd, c->capd, 256) || VT_GROW(c->dhash, c->nd, c->capdh, 256))
        return w->err = VT_ERR_NOMEM, -1;
    while (c->dbn + 4 + n > c->dbcap) {
        size_t nc = c->dbcap ? c->dbcap * 2 : 4096;
        uint8_t *b = realloc(c->db, nc);
        if (!b)
            return w->err = VT_ERR_NOMEM, -1;
        c->db = b;
        c->dbcap = nc;
    }
    uint32_t len = (uint32_t)n;
    c->doff[c->nd] = (uint32_t)c->dbn;
    c->dhash[c->nd] = h;
    memcpy(c->db + c->dbn, &len, 4);
    memcpy(c->db + c->dbn + 4, s, n);
    c->dbn += 4 + n;
    c->ht[j] = (uint32_t)c->nd + 1;
    return (int64_t)c->nd++;
}

static void add_index(vt_pq *w, pq_column *c, const char *s, size_t n)
{
    int64_t e;
    uint32_t len;
    size_t k = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) & (PQ_SEEN - 1);
    if (c->seen[k].s == s && c->seen[k].n == n &&
        (memcpy(&len, c->db + c->doff[c->seen[k].e], 4), len == n) &&
        !memcmp(c->db + c->doff[c->seen[k].e] + 4, s, n)) {
        e = c->seen[k].e;
    } else {
        e = dict_add(w, c, s, n);
        if (e < 0)
            return;
        c->seen[k].s = s;
        c->seen[k].n = n;
        c->seen[k].e = (uint32_t)e;
    }
    if (VT_GROW(c->ix, c->nix, c->capix, 1024)) {
        w->err = VT_ERR_NOMEM;
        return;
    }
    c->ix[c->nix++] = (uint32_t)e;
}

void vt_pq_strn(vt_pq *w, int col, const char *s, size_t n)
{
    pq_column *c = col_for(w, col, 1);
    if (!c)
        return;
    if (c->c.type != VT_PQ_STRING) {
        w->err = VT_ERR_INVALID;
        return;
    }
    if (c->dbn > UINT32_MAX / 2) { /* the dictionary's offsets are 32-bit */
        w->err = VT_ERR_TOO_LARGE;
        return;
    }
    add_index(w, c, s, n);
    lev(w, c, 1, 0);
}

void vt_pq_str(vt_pq *w, int col, const char *s)
{
    if (s)
        vt_pq_strn(w, col, s, strlen(s));
}

void vt_pq_list(vt_pq *w, int col, const char *const *items, uint32_t n)
{
    pq_column *c = col_for(w, col, 1);
    if (!c)
        return;
    if (c->c.type != VT_PQ_STRING_LIST || c->dbn > UINT32_MAX / 2) {
        w->err = c->c.type != VT_PQ_STRING_LIST ? VT_ERR_INVALID : VT_ERR_TOO_LARGE;
        return;
    }
    int base = c->c.optional ? 1 : 0;
    if (!n)
        lev(w, c, base, 0);
    for (uint32_t k = 0; k < n; k++) {
        const char *s = items[k] ? items[k] : "";
        add_index(w, c, s, strlen(s));
        lev(w, c, base + 1, k ? 1 : 0);
    }
}

/* ------------------------------------------------------------ pages */

static int page_room(vt_pq *w, size_t more)
{
    if (w->npage + more <= w->cappage)
        return 0;
    size_t nc = w->cappage ? w->cappage : 65536;
    while (nc < w->npage + more)
        nc *= 2;
    uint8_t *p = realloc(w->page, nc);
    if (!p)
        return w->err = VT_ERR_NOMEM;
    w->page = p;
    w->cappage = nc;
    return 0;
}

static void page_put(vt_pq *w, const void *p, size_t n)
{
    if (n && !page_room(w, n)) {
        memcpy(w->page + w->npage, p, n);
        w->npage += n;
    }
}

static void page_varint(vt_pq *w, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    page_put(w, b, (size_t)n);
}

/* Levels as RLE runs, after their 4-byte length (data page v1). */
static void page_levels(vt_pq *w, const uint8_t *a, size_t n)
{
    size_t at = w->npage;
    uint32_t len = 0;
    page_put(w, &len, 4);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && a[j] == a[i])
            j++;
        page_varint(w, (uint64_t)(j - i) << 1);
        page_put(w, &a[i], 1);
        i = j;
    }
    if (!w->err) {
        len = (uint32_t)(w->npage - at - 4);
        memcpy(w->page + at, &len, 4);
    }
}

/* Dictionary indices: the bit width, then one bit-packed run of groups of
 * 8 (the last padded with zeros). */
static void page_indices(vt_pq *w, const uint32_t *ix, size_t n, size_t nd)
{
    uint8_t bw = 1;
    while (bw < 32 && ((size_t)1 << bw) < nd)
        bw++;
    page_put(w, &bw, 1);
    if (!n)
        return;
    size_t groups = (n + 7) / 8;
    page_varint(w, (uint64_t)groups << 1 | 1);
    if (page_room(w, groups * bw + 8))
        return;
    uint8_t *o = w->page + w->npage;
    uint64_t acc = 0;
    unsigned bits = 0;
    size_t m = 0;
    for (size_t k = 0; k < groups * 8; k++) {
        acc |= (uint64_t)(k < n ? ix[k] : 0) << bits;
        bits += bw;
        while (bits >= 8) {
            o[m++] = (uint8_t)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    w->npage += m;
}

/* DELTA_BINARY_PACKED: blocks of 128 values in 4 miniblocks of 32; each
 * block its smallest delta, then each miniblock's deltas less that,
 * bit-packed at the miniblock's width.  Deltas wrap (in 32 bits for an
 * INT32 column), as the format says.  Timestamps, ids and step numbers
 * that rise a little each row come out at a few bits a value, where PLAIN
 * gives zstd 8 bytes of mostly unchanging high bits. */
#define PQ_DB_BLOCK 128
#define PQ_DB_MINI 4
#define PQ_DB_MV (PQ_DB_BLOCK / PQ_DB_MINI)

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void page_delta(vt_pq *w, const int64_t *v, size_t n, int is32)
{
    page_varint(w, PQ_DB_BLOCK);
    page_varint(w, PQ_DB_MINI);
    page_varint(w, n);
    page_varint(w, zigzag(n ? v[0] : 0));
    uint64_t u[PQ_DB_BLOCK];
    for (size_t i = 1; i < n && !w->err; i += PQ_DB_BLOCK) {
        size_t m = n - i < PQ_DB_BLOCK ? n - i : PQ_DB_BLOCK;
        int64_t mind = INT64_MAX;
        for (size_t j = 0; j < m; j++) {
            uint64_t a = (uint64_t)v[i + j], b = (uint64_t)v[i + j - 1];
            int64_t d = is32 ? (int64_t)(int32_t)(uint32_t)(a - b) : (int64_t)(a - b);
            u[j] = (uint64_t)d;
            mind = d < mind ? d : mind;
        }
        page_varint(w, zigzag(mind));
        if (page_room(w, PQ_DB_MINI + PQ_DB_BLOCK * 8))
            return;
        uint8_t *widths = w->page + w->npage, *o = widths + PQ_DB_MINI;
        for (size_t j = 0; j < m; j++)
            u[j] = is32 ? (uint32_t)(u[j] - (uint64_t)mind) : u[j] - (uint64_t)mind;
        for (int mb = 0; mb < PQ_DB_MINI; mb++) {
            size_t lo = (size_t)mb * PQ_DB_MV;
            if (lo >= m) {
                widths[mb] = 0; /* no values: no bytes */
                continue;
            }
            size_t hi = lo + PQ_DB_MV < m ? lo + PQ_DB_MV : m;
            uint64_t any = 0;
            for (size_t j = lo; j < hi; j++)
                any |= u[j];
            unsigned bw = any ? 64u - (unsigned)__builtin_clzll(any) : 0;
            widths[mb] = (uint8_t)bw;
            unsigned __int128 acc = 0;
            unsigned bits = 0;
            for (size_t j = lo; j < lo + PQ_DB_MV && bw; j++) { /* the last one padded with zeros */
                acc |= (unsigned __int128)(j < hi ? u[j] : 0) << bits;
                bits += bw;
                while (bits >= 8) {
                    *o++ = (uint8_t)acc;
                    acc >>= 8;
                    bits -= 8;
                }
            }
        }
        w->npage = (size_t)(o - w->page);
    }
}

int vt_pq_file_put(vt_pq *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return w->err = VT_ERR_IO;
    w->off += (int64_t)n;
    return 0;
}

/* Compress w->page and write it with its header.  type 0 data, 2 dictionary. */
static int page_write(vt_pq *w, int type, int32_t nvalues, int encoding, int64_t *unc, int64_t *comp)
{
    if (w->err)
        return w->err;
    size_t bound = ZSTD_compressBound(w->npage);
    if (bound > w->capzbuf) {
        uint8_t *z = realloc(w->zbuf, bound);
        if (!z)
            return w->err = VT_ERR_NOMEM;
        w->zbuf = z;
        w->capzbuf = bound;
    }
    if (!w->zc) {
        if (!(w->zc = ZSTD_createCCtx()))
            return w->err = VT_ERR_NOMEM;
        w->own_zc = 1;
    }
    size_t zn = ZSTD_compressCCtx(w->zc, w->zbuf, bound, w->page, w->npage, PQ_ZSTD_LEVEL);
    if (ZSTD_isError(zn))
        return w->err = VT_ERR_NOMEM;
    if (w->npage > INT32_MAX || zn > INT32_MAX)
        return w->err = VT_ERR_TOO_LARGE;
    vt_tw *t = &w->tw;
    vt_tw_reset(t);
    vt_tw_i32(t, 1, type);
    vt_tw_i32(t, 2, (int32_t)w->npage);
    vt_tw_i32(t, 3, (int32_t)zn);
    if (type == 2) {
        vt_tw_begin(t, 7); /* DictionaryPageHeader */
        vt_tw_i32(t, 1, nvalues);
        vt_tw_i32(t, 2, 0); /* PLAIN */
        vt_tw_end(t);
    } else {
        vt_tw_begin(t, 5); /* DataPageHeader */
        vt_tw_i32(t, 1, nvalues);
        vt_tw_i32(t, 2, encoding);
        vt_tw_i32(t, 3, 3); /* RLE */
        vt_tw_i32(t, 4, 3);
        vt_tw_end(t);
    }
    vt_tw_end(t);
    if (t->err)
        return w->err = t->err;
    *unc += (int64_t)(t->n + w->npage);
    *comp += (int64_t)(t->n + zn);
    if (vt_pq_file_put(w, t->b, t->n) || vt_pq_file_put(w, w->zbuf, zn))
        return w->err;
    return 0;
}

static int entry_cmp(const pq_column *c, uint32_t a, uint32_t b)
{
    uint32_t la, lb;
    memcpy(&la, c->db + c->doff[a], 4);
    memcpy(&lb, c->db + c->doff[b], 4);
    int r = memcmp(c->db + c->doff[a] + 4, c->db + c->doff[b] + 4, la < lb ? la : lb);
    return r ? r : (la > lb) - (la < lb);
}

static int chunk_write(vt_pq *w, pq_column *c)
{
    if (VT_GROW(c->ch, c->nch, c->capch, 16))
        return w->err = VT_ERR_NOMEM;
    pq_chunk *k = &c->ch[c->nch];
    memset(k, 0, sizeof(*k));
    k->num_values = (int64_t)c->nlev;
    k->nulls = c->nulls;
    int enc = 0, konst = 0;
    if (is_str(c) && c->nd) {
        k->has_dict = 1;
        k->dict_off = w->off;
        w->npage = 0;
        page_put(w, c->db, c->dbn);
        if (page_write(w, 2, (int32_t)c->nd, 0, &k->unc, &k->comp))
            return w->err;
        enc = 8; /* RLE_DICTIONARY */
        uint32_t mn = 0, mx = 0;
        for (uint32_t e = 1; e < c->nd; e++) {
            if (entry_cmp(c, e, mn) < 0)
                mn = e;
            if (entry_cmp(c, e, mx) > 0)
                mx = e;
        }
        uint32_t lmn, lmx;
        memcpy(&lmn, c->db + c->doff[mn], 4);
        memcpy(&lmx, c->db + c->doff[mx], 4);
        if (lmn <= PQ_STAT_MAX && lmx <= PQ_STAT_MAX) {
            k->have_stats = 1;
            k->nmin = (uint8_t)lmn;
            k->nmax = (uint8_t)lmx;
            memcpy(k->min, c->db + c->doff[mn] + 4, lmn);
            memcpy(k->max, c->db + c->doff[mx] + 4, lmx);
        }
    } else if (!is_str(c) && c->niv) {
        int64_t imin = c->iv[0], imax = c->iv[0];
        for (size_t i = 1; i < c->niv; i++) { /* branch-free: vectorized */
            int64_t v = c->iv[i];
            imin = v < imin ? v : imin;
            imax = v > imax ? v : imax;
        }
        k->have_stats = 1;
        k->nmin = k->nmax = c->c.type == VT_PQ_INT32 ? 4 : 8;
        if (c->c.type == VT_PQ_INT32) {
            int32_t a = (int32_t)imin, b = (int32_t)imax;
            memcpy(k->min, &a, 4);
            memcpy(k->max, &b, 4);
        } else {
            memcpy(k->min, &imin, 8);
            memcpy(k->max, &imax, 8);
        }
        if (imin == imax) { /* one value (a pid, a device, a grid's y): a dictionary of it, one RLE run */
            konst = 1;
            k->has_dict = 1;
            k->dict_off = w->off;
            w->npage = 0;
            page_put(w, k->min, k->nmin);
            if (page_write(w, 2, 1, 0, &k->unc, &k->comp))
                return w->err;
            enc = 8;
        }
    }
    k->data_off = w->off;
    w->npage = 0;
    if (c->max_rep)
        page_levels(w, c->rep, c->nlev);
    if (c->max_def)
        page_levels(w, c->def, c->nlev);
    if (is_str(c)) {
        if (c->nd)
            page_indices(w, c->ix, c->nix, c->nd);
    } else if (konst) {
        uint8_t bw = 1, zero = 0;
        page_put(w, &bw, 1);
        page_varint(w, (uint64_t)c->niv << 1);
        page_put(w, &zero, 1);
    } else {
        /* DELTA_BINARY_PACKED where it takes at most half of PLAIN's bytes
         * (times, ids, steps); PLAIN for the rest (addresses, sizes), where
         * zstd finds the repeats */
        int is32 = c->c.type == VT_PQ_INT32;
        size_t at = w->npage, plain = c->niv * (is32 ? 4 : 8);
        page_delta(w, c->iv, c->niv, is32);
        if (w->err)
            return w->err;
        if ((w->npage - at) * 2 <= plain) {
            enc = 5;
            k->delta = 1;
        } else if (is32) {
            w->npage = at;
            if (!page_room(w, plain)) {
                for (size_t i = 0; i < c->niv; i++) {
                    int32_t v = (int32_t)c->iv[i];
                    memcpy(w->page + w->npage + 4 * i, &v, 4);
                }
                w->npage += plain;
            }
        } else {
            w->npage = at;
            page_put(w, c->iv, plain);
        }
    }
    if (page_write(w, 0, (int32_t)c->nlev, enc, &k->unc, &k->comp))
        return w->err;
    c->nch++;
    /* the next row group starts empty */
    c->nlev = c->niv = c->nix = c->nd = c->dbn = 0;
    c->nulls = 0;
    memset(c->seen, 0, sizeof(c->seen));
    if (c->ht)
        memset(c->ht, 0, c->hcap * sizeof(uint32_t));
    return 0;
}

static int group_write(vt_pq *w)
{
    if (!w->rows)
        return 0;
    if (VT_GROW(w->groups, w->ngroups, w->capgroups, 16))
        return w->err = VT_ERR_NOMEM;
    pq_group *g = &w->groups[w->ngroups];
    memset(g, 0, sizeof(*g));
    g->rows = w->rows;
    for (int k = 0; k < w->ncols && !w->err; k++) {
        pq_column *c = &w->cols[k];
        if (chunk_write(w, c))
            break;
        g->unc += c->ch[c->nch - 1].unc;
        g->comp += c->ch[c->nch - 1].comp;
    }
    if (w->err)
        return w->err;
    w->ngroups++;
    w->rows = 0;
    return 0;
}

int vt_pq_row(vt_pq *w)
{
    if (w->err)
        return w->err;
    const uint64_t all = w->ncols == 64 ? ~0ull : (1ull << w->ncols) - 1;
    uint64_t missing = ~w->set & all;
    w->set = 0;
    if (missing & w->required)
        return w->err = VT_ERR_INVALID;
    for (; missing; missing &= missing - 1) { /* the nulls of the row */
        pq_column *c = &w->cols[__builtin_ctzll(missing)];
        c->nulls++;
        lev(w, c, 0, 0);
    }
    w->rows++;
    w->rows_total++;
    if (w->rows >= w->rpg)
        group_write(w);
    return w->err;
}

int vt_pq_close(vt_pq *w)
{
    if (!w->err)
        group_write(w);
    if (!w->err)
        vt_pq_footer_write(w);
    if (w->f) {
        if (fclose(w->f) && !w->err)
            w->err = VT_ERR_IO;
        w->f = NULL;
    }
    return w->err;
}

void vt_pq_free(vt_pq *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    for (int k = 0; k < w->ncols && w->cols; k++) {
        pq_column *c = &w->cols[k];
        free(c->def);
        free(c->rep);
        free(c->iv);
        free(c->ix);
        free(c->db);
        free(c->doff);
        free(c->dhash);
        free(c->ht);
        free(c->ch);
    }
    free(w->cols);
    free(w->groups);
    if (w->own_zc)
        ZSTD_freeCCtx(w->zc);
    free(w->page);
    free(w->zbuf);
    free(w->utf);
    vt_tw_free(&w->tw);
    free(w);
}
