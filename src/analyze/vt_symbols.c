/* vt_symbols.c - symbols that travel with a trace (issue 22, item 6; as
 * heaptrack's interpret step or perf's build-id cache): on the recording
 * host every native frame the trace references is resolved and written
 * beside the trace as TRACE.sym, keyed by the module's build id and the
 * address; a report elsewhere, where the binaries are missing or differ,
 * takes its function and file:line from there (vt_symbolizer_lookup).
 *
 * TRACE.sym is text, one entry per resolved address:
 *   vramtrace-symbols 1
 *   S <build-id hash, hex> <address in the file, hex> <status> <lines>
 *   L <line> <inlined 0|1> <function>\t<file>      (lines times, innermost first)
 * Tabs and newlines in names become spaces; an empty name is none.
 * Touches: the trace (read), TRACE.sym (written through a temporary and
 * renamed), the binaries it names (read). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_grow.h"
#include "vt_reader.h"

#define SYM_MAX_FILE (256u << 20) /* a .sym larger than this is not read */
#define SYM_MAX_LINES 64          /* inline levels per address */
#define VT_SYM_BID_MAX 64         /* build-id bytes kept (GNU build ids are 20) */

typedef struct {
    char *path;
    uint8_t bid[VT_SYM_BID_MAX];
    uint32_t bid_len;
    uint64_t bias;
} sym_mod;

typedef struct {
    uint64_t ip;
    uint32_t module;
} sym_frame;

static void put_name(FILE *f, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

int vt_symbols_write(const char *trace, const char *sysroot, uint64_t *nframes, uint64_t *nresolved, char *msg,
                     size_t len)
{
    *nframes = *nresolved = 0;
    msg[0] = 0;
    vt_reader *r;
    int rc = vt_reader_open(&r, trace, msg, len);
    if (rc)
        return rc;
    sym_mod *mods = NULL;
    size_t nmods = 0, capmods = 0;
    sym_frame *frs = NULL;
    size_t nfrs = 0, capfrs = 0;
    vt_event ev;
    int read_rc;
    while ((read_rc = vt_reader_next(r, &ev)) != 0) {
        if (read_rc < 0) {
            if (read_rc == VT_ERR_CORRUPT || read_rc == VT_ERR_TOO_LARGE)
                continue; /* damage: what is readable still counts */
            break;
        }
        if (ev.type == VT_EV_MODULE) {
            const vt_ev_module *m = &ev.u.module;
            while (nmods <= m->id) {
                if (m->id > (1u << 20) || VT_GROW(mods, nmods, capmods, 64)) {
                    rc = VT_ERR_NOMEM;
                    goto out;
                }
                memset(&mods[nmods++], 0, sizeof(*mods));
            }
            sym_mod *d = &mods[m->id];
            free(d->path);
            d->path = m->path ? strdup(m->path) : NULL;
            d->bias = m->load_bias;
            d->bid_len = m->build_id_len < VT_SYM_BID_MAX ? m->build_id_len : VT_SYM_BID_MAX;
            if (m->build_id)
                memcpy(d->bid, m->build_id, d->bid_len);
        } else if (ev.type == VT_EV_FRAME && ev.u.frame.kind == VT_FRAME_NATIVE) {
            if (VT_GROW(frs, nfrs, capfrs, 1024)) {
                rc = VT_ERR_NOMEM;
                goto out;
            }
            frs[nfrs++] = (sym_frame){ev.u.frame.ip, ev.u.frame.module};
        }
    }
    vt_symbolizer *s = NULL;
    if ((rc = vt_symbolizer_create(&s, sysroot)))
        goto out;
    char tmp[4200], dst[4200];
    snprintf(dst, sizeof(dst), "%s.sym", trace);
    snprintf(tmp, sizeof(tmp), "%s.sym.%d", trace, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(msg, len, "%s: %s", tmp, strerror(errno));
        vt_symbolizer_free(s);
        rc = VT_ERR_IO;
        goto out;
    }
    fputs("vramtrace-symbols 1\n", f);
    vt_map done = {0};
    for (size_t i = 0; i < nfrs; i++) {
        const sym_mod *m = frs[i].module < nmods ? &mods[frs[i].module] : NULL;
        if (!m || !m->path || !m->bid_len || frs[i].ip < m->bias)
            continue;
        (*nframes)++;
        uint64_t off = frs[i].ip - m->bias, bidh = vt_symbols_bid_hash(m->bid, m->bid_len);
        int any = 0;
        /* as the report asks: the address itself (the innermost frame) and
         * the call before a return address (every other frame) */
        for (int k = 0; k < 2; k++) {
            if (k && !off)
                break;
            uint64_t rel = off - (uint64_t)k;
            uint64_t key = vt_symbols_key(bidh, rel);
            if (vt_map_get(&done, key))
                continue;
            const vt_symres *res = vt_symbolizer_lookup(s, m->path, m->bid, m->bid_len, rel);
            if (!res->nlines || vt_map_put(&done, key, 1))
                continue;
            any = 1;
            uint32_t nl = res->nlines < SYM_MAX_LINES ? res->nlines : SYM_MAX_LINES;
            fprintf(f, "S %" PRIx64 " %" PRIx64 " %d %u\n", bidh, rel, res->status, nl);
            for (uint32_t l = 0; l < nl; l++) {
                fprintf(f, "L %u %d ", res->lines[l].line, res->lines[l].inlined ? 1 : 0);
                put_name(f, res->lines[l].function);
                fputc('\t', f);
                put_name(f, res->lines[l].file);
                fputc('\n', f);
            }
        }
        *nresolved += any;
    }
    vt_map_free(&done);
    vt_symbolizer_free(s);
    if (fclose(f) || rename(tmp, dst)) {
        snprintf(msg, len, "%s: %s", dst, strerror(errno));
        unlink(tmp);
        rc = VT_ERR_IO;
        goto out;
    }
    chmod(dst, 0644);
    rc = 0;
out:
    for (size_t i = 0; i < nmods; i++)
        free(mods[i].path);
    free(mods);
    free(frs);
    vt_reader_free(r);
    return rc;
}

static char *dup_or_null(const char *b, const char *e)
{
    if (e <= b)
        return NULL;
    char *s = malloc((size_t)(e - b) + 1);
    if (s) {
        memcpy(s, b, (size_t)(e - b));
        s[e - b] = 0;
    }
    return s;
}

int vt_symbols_load(vt_symbolizer *s, const char *path, char *msg, size_t len)
{
    msg[0] = 0;
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return VT_ERR_NOT_FOUND;
    if ((uint64_t)st.st_size > SYM_MAX_FILE) {
        snprintf(msg, len, "%s: %lld bytes, more than a symbols file holds: not read", path, (long long)st.st_size);
        return VT_ERR_TOO_LARGE;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        return VT_ERR_IO;
    }
    char line[8192];
    uint64_t ln = 0;
    int rc = 0;
    if (!fgets(line, sizeof(line), f) || strcmp(line, "vramtrace-symbols 1\n")) {
        snprintf(msg, len, "%s: line 1: not a vramtrace symbols file (version 1)", path);
        fclose(f);
        return VT_ERR_VERSION;
    }
    ln = 1;
    vt_symbolizer_saw_travel(s);
    vt_symline lines[SYM_MAX_LINES];
    while (fgets(line, sizeof(line), f)) {
        ln++;
        uint64_t bidh, rel;
        int status;
        unsigned nl;
        if (sscanf(line, "S %" SCNx64 " %" SCNx64 " %d %u", &bidh, &rel, &status, &nl) != 4 || nl == 0 ||
            nl > SYM_MAX_LINES || status < 0 || status > VT_SYM_NO_DEBUG_INFO) {
            snprintf(msg, len, "%s: line %" PRIu64 ": expected an entry (S HASH ADDRESS STATUS LINES)", path, ln);
            rc = VT_ERR_CORRUPT;
            break;
        }
        unsigned got = 0;
        for (; got < nl && fgets(line, sizeof(line), f); got++) {
            ln++;
            unsigned lno;
            int inl, pos = 0;
            if (sscanf(line, "L %u %d %n", &lno, &inl, &pos) != 2 || !pos)
                break;
            char *fn = line + pos, *tab = strchr(fn, '\t'), *end = fn + strcspn(fn, "\n");
            if (!tab || tab > end)
                break;
            lines[got] = (vt_symline){dup_or_null(fn, tab), dup_or_null(tab + 1, end), lno, inl ? 1 : 0};
        }
        if (got == nl) {
            vt_symres res = {status, lines, nl};
            rc = vt_symbolizer_add_travel(s, bidh, rel, &res);
        } else {
            snprintf(msg, len, "%s: line %" PRIu64 ": expected %u lines of the entry (L LINE INLINED FUNCTION\\tFILE)",
                     path, ln, nl);
            rc = VT_ERR_CORRUPT;
        }
        for (unsigned k = 0; k < got; k++) {
            free(lines[k].function);
            free(lines[k].file);
        }
        if (rc)
            break;
    }
    fclose(f);
    return rc;
}
