/* vt_symbol.c - offline symbolization of native frames with elfutils libdwfl.
 *
 * One Dwfl per ELF file (keyed by path), the file reported at base 0 so
 * that addresses are ELF virtual addresses (ip - load_bias).  The build-id
 * recorded in the trace is compared with the file's; a missing or different
 * file is not read and the frame stays module+offset with the reason.
 * Results are cached per file and address.  Inlined frames are expanded
 * from the DWARF scopes (innermost first), C++ names demangled with the
 * C++ ABI's __cxa_demangle.  With a cache directory (vt_symcache.c) the
 * cached results of a module are read first and the file is opened only
 * for an address the cache does not have: a module is read once per build
 * id on a host.  May touch: the files named in the trace, read only; the
 * cache directory.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_scopes.h"
#include "vt_error.h"
#include "vt_grow.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

typedef struct {
    char *path;
    uint8_t *bid;
    uint32_t bid_len;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    vt_symtab *symtab; /* its symbol table sorted (vt_symtab.c), built at the first address */
    int symtab_tried;
    vt_scopes *scopes; /* its units' scope trees (vt_scopes.c), each walked once */
    int status;      /* VT_SYM_OK or why the file cannot be used */
    int opened;      /* open_file ran (status is its answer) */
    int cached;      /* 1 the cache was read (key set), -1 no cache for it */
    char key[136];   /* its cache file (vt_symcache_key) */
    vt_map cache;    /* rel + 1 -> index + 1 into results */
    vt_symcache_ent *ents; /* every result it has, to write back: r is the index into results */
    size_t nents, capents;
    size_t nnew;     /* of them resolved here, not yet written back */
} vt_symfile;

/* symbols that travelled with a trace (its .sym file, vt_symbols.c):
 * (build-id hash, address) -> result, used when the binary is not here */
typedef struct {
    uint64_t bidh, rel;
    vt_symres r;
} vt_travel;

struct vt_symbolizer {
    char *sysroot;
    vt_travel *travel;
    size_t ntravel, captravel;
    vt_map travel_map;  /* key -> index + 1 */
    vt_map travel_bids; /* build-id hash | 1 -> 1: modules the .sym resolved anything in */
    int travel_seen;    /* a .sym was read */
    vt_symfile *files;
    size_t nfiles, capfiles;
    vt_symres *res;
    size_t nres, capres;
    vt_symres fail[8];   /* static results for failures, by status */
    char *cache_dir;     /* NULL: no cache */
    char cache_msg[600]; /* the latest damaged cache file, until read */
    vt_symbolizer_stats st;
};

static const Dwfl_Callbacks vt_dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

const char *vt_sym_status_name(int status)
{
    switch (status) {
    case VT_SYM_OK: return "ok";
    case VT_SYM_NO_MODULE: return "no module";
    case VT_SYM_NOT_FOUND: return "binary not found";
    case VT_SYM_BUILD_ID_MISMATCH: return "build-id mismatch";
    case VT_SYM_NO_SYMBOL: return "no symbol";
    case VT_SYM_DISABLED: return "not symbolized";
    case VT_SYM_NO_DEBUG_INFO: return "no debug info";
    case VT_SYM_UNRESOLVED_THERE: return "not resolved where recorded";
    default: return "?";
    }
}

int vt_symbolizer_create(vt_symbolizer **out, const char *sysroot)
{
    /* libelf's version handshake writes a global: done here, before any
     * thread of vt_symbols.c opens a file */
    elf_version(EV_CURRENT);
    vt_symbolizer *s = calloc(1, sizeof(*s));
    if (!s)
        return VT_ERR_NOMEM;
    if (sysroot && *sysroot) {
        s->sysroot = strdup(sysroot);
        if (!s->sysroot) {
            free(s);
            return VT_ERR_NOMEM;
        }
    }
    for (int i = 0; i < 8; i++)
        s->fail[i].status = i;
    *out = s;
    return 0;
}

static void res_free(vt_symres *r)
{
    for (uint32_t i = 0; i < r->nlines; i++) {
        free(r->lines[i].function);
        free(r->lines[i].file);
    }
    free(r->lines);
}

void vt_symbolizer_free(vt_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nfiles; i++) {
        free(s->files[i].path);
        free(s->files[i].bid);
        vt_symtab_free(s->files[i].symtab);
        vt_scopes_free(s->files[i].scopes);
        if (s->files[i].dwfl)
            dwfl_end(s->files[i].dwfl);
        vt_map_free(&s->files[i].cache);
        free(s->files[i].ents);
    }
    free(s->files);
    for (size_t i = 0; i < s->ntravel; i++)
        res_free(&s->travel[i].r);
    free(s->travel);
    vt_map_free(&s->travel_map);
    vt_map_free(&s->travel_bids);
    for (size_t i = 0; i < s->nres; i++)
        res_free(&s->res[i]);
    free(s->res);
    free(s->sysroot);
    free(s->cache_dir);
    free(s);
}

int vt_symbolizer_set_cache(vt_symbolizer *s, const char *dir)
{
    free(s->cache_dir);
    s->cache_dir = NULL;
    if (dir && *dir && !(s->cache_dir = strdup(dir)))
        return VT_ERR_NOMEM;
    return 0;
}

void vt_symbolizer_get_stats(const vt_symbolizer *s, vt_symbolizer_stats *st)
{
    *st = s->st;
}

const char *vt_symbolizer_cache_msg(vt_symbolizer *s)
{
    return s->cache_msg;
}

static char *demangle(const char *name)
{
    if (!name)
        return NULL;
    if (name[0] == '_' && name[1] == 'Z') {
        int st = 0;
        char *d = __cxa_demangle(name, NULL, NULL, &st);
        if (d && st == 0)
            return d;
        free(d);
    }
    return strdup(name);
}

static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute at;
    const char *n = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
        n = dwarf_formstring(&at);
    if (!n && dwarf_attr_integrate(die, DW_AT_name, &at))
        n = dwarf_formstring(&at);
    return n;
}

static int open_file(vt_symbolizer *s, vt_symfile *f)
{
    char *full = f->path;
    if (s->sysroot) {
        size_t n = strlen(s->sysroot) + strlen(f->path) + 2;
        full = malloc(n);
        if (!full)
            return VT_SYM_NOT_FOUND;
        snprintf(full, n, "%s%s", s->sysroot, f->path);
    }
    int st = VT_SYM_OK;
    if (!*f->path || access(full, R_OK) != 0) {
        st = VT_SYM_NOT_FOUND;
        goto out;
    }
    struct stat sb;
    s->st.opened++;
    if (stat(full, &sb) == 0)
        s->st.opened_bytes += (uint64_t)sb.st_size;
    f->dwfl = dwfl_begin(&vt_dwfl_callbacks);
    if (!f->dwfl) {
        st = VT_SYM_NOT_FOUND;
        goto out;
    }
    dwfl_report_begin(f->dwfl);
    f->mod = dwfl_report_elf(f->dwfl, f->path, full, -1, 0, false);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (!f->mod) {
        st = VT_SYM_NOT_FOUND;
        goto out;
    }
    if (f->bid_len) {
        const unsigned char *bits = NULL;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(f->mod, &bits, &vaddr);
        if (n <= 0 || (uint32_t)n != f->bid_len || memcmp(bits, f->bid, f->bid_len) != 0) {
            st = VT_SYM_BUILD_ID_MISMATCH;
            goto out;
        }
    }
out:
    if (full != f->path)
        free(full);
    if (st != VT_SYM_OK && f->dwfl) {
        dwfl_end(f->dwfl);
        f->dwfl = NULL;
        f->mod = NULL;
    }
    return st;
}

static vt_symfile *get_file(vt_symbolizer *s, const char *path, const uint8_t *bid, uint32_t bid_len)
{
    for (size_t i = 0; i < s->nfiles; i++) {
        vt_symfile *f = &s->files[i];
        if (!strcmp(f->path, path) && f->bid_len == bid_len && (!bid_len || !memcmp(f->bid, bid, bid_len)))
            return f;
    }
    if (VT_GROW(s->files, s->nfiles, s->capfiles, 16))
            return NULL;
    vt_symfile *f = &s->files[s->nfiles];
    memset(f, 0, sizeof(*f));
    f->path = strdup(path);
    if (!f->path)
        return NULL;
    if (bid_len) {
        f->bid = malloc(bid_len);
        if (!f->bid) {
            free(f->path);
            return NULL;
        }
        memcpy(f->bid, bid, bid_len);
        f->bid_len = bid_len;
    }
    s->nfiles++;
    return f; /* opened when an address is not in the cache (ensure_open) */
}

static void ensure_open(vt_symbolizer *s, vt_symfile *f)
{
    if (!f->opened) {
        f->opened = 1;
        f->status = open_file(s, f);
    }
}

/* a result that is the symbolizer's own: a deep copy at the end of results */
static int res_push(vt_symbolizer *s, const vt_symres *r, size_t *idx)
{
    if (VT_GROW(s->res, s->nres, s->capres, 256))
        return VT_ERR_NOMEM;
    vt_symres *d = &s->res[s->nres];
    memset(d, 0, sizeof(*d));
    d->status = r->status;
    if (r->nlines && !(d->lines = calloc(r->nlines, sizeof(*d->lines))))
        return VT_ERR_NOMEM;
    for (uint32_t i = 0; i < r->nlines; i++, d->nlines++) {
        vt_symline *l = &d->lines[i];
        l->function = r->lines[i].function ? strdup(r->lines[i].function) : NULL;
        l->file = r->lines[i].file ? strdup(r->lines[i].file) : NULL;
        l->line = r->lines[i].line;
        l->inlined = r->lines[i].inlined;
        if ((r->lines[i].function && !l->function) || (r->lines[i].file && !l->file)) {
            d->nlines++;
            res_free(d);
            return VT_ERR_NOMEM;
        }
    }
    *idx = s->nres++;
    return 0;
}

/* a result of f's module at rel, index into results, known from now on */
static int file_add(vt_symfile *f, uint64_t rel, size_t idx, int fresh)
{
    if (f->cached > 0) {
        if (VT_GROW(f->ents, f->nents, f->capents, 64))
            return VT_ERR_NOMEM;
        f->ents[f->nents++] = (vt_symcache_ent){rel, (const vt_symres *)(uintptr_t)(idx + 1)};
        f->nnew += fresh;
    }
    return vt_map_put(&f->cache, rel + 1, idx + 1) ? VT_ERR_NOMEM : 0;
}

typedef struct {
    vt_symbolizer *s;
    vt_symfile *f;
} cache_load;

static int cache_add(void *arg, uint64_t rel, const vt_symres *r)
{
    cache_load *cl = arg;
    if (vt_map_get(&cl->f->cache, rel + 1))
        return 0; /* known already (resolved here, or read before) */
    size_t idx;
    int rc = res_push(cl->s, r, &idx);
    return rc ? rc : file_add(cl->f, rel, idx, 0);
}

static void cache_note(vt_symbolizer *s, const char *msg)
{
    s->st.cache_damaged++;
    snprintf(s->cache_msg, sizeof(s->cache_msg), "%s", msg);
}

/* the cache's results for f's module, once */
static void cache_read(vt_symbolizer *s, vt_symfile *f)
{
    if (f->cached)
        return;
    f->cached = -1;
    if (!s->cache_dir)
        return;
    char full[4200];
    snprintf(full, sizeof(full), "%s%s", s->sysroot ? s->sysroot : "", f->path);
    if (vt_symcache_key(f->key, sizeof(f->key), full, f->bid, f->bid_len))
        return;
    f->cached = 1;
    char msg[600];
    cache_load cl = {s, f};
    int rc = vt_symcache_read(s->cache_dir, f->key, cache_add, &cl, msg, sizeof(msg));
    if (rc && rc != VT_ERR_NOT_FOUND && msg[0]) {
        cache_note(s, msg);
        f->nnew++; /* rewrite it whole at the flush, with what was readable */
    }
}

static int cmp_ent(const void *a, const void *b)
{
    const vt_symcache_ent *x = a, *y = b;
    return x->rel < y->rel ? -1 : x->rel > y->rel;
}

int vt_symbolizer_flush(vt_symbolizer *s, char *msg, size_t len)
{
    int first = 0;
    msg[0] = 0;
    for (size_t i = 0; s->cache_dir && i < s->nfiles; i++) {
        vt_symfile *f = &s->files[i];
        if (f->cached <= 0 || !f->nnew)
            continue;
        /* under the lock, what others wrote since we read it joins ours */
        int lk = vt_symcache_lock(s->cache_dir, f->key);
        char m2[600];
        cache_load cl = {s, f};
        int rc = vt_symcache_read(s->cache_dir, f->key, cache_add, &cl, m2, sizeof(m2));
        if (rc && rc != VT_ERR_NOT_FOUND && m2[0] && strcmp(m2, s->cache_msg))
            cache_note(s, m2);
        vt_symcache_ent *w = malloc((f->nents ? f->nents : 1) * sizeof(*w));
        if (!w) {
            vt_symcache_unlock(lk);
            return VT_ERR_NOMEM;
        }
        for (size_t k = 0; k < f->nents; k++)
            w[k] = (vt_symcache_ent){f->ents[k].rel, &s->res[(uintptr_t)f->ents[k].r - 1]};
        qsort(w, f->nents, sizeof(*w), cmp_ent);
        rc = vt_symcache_write(s->cache_dir, f->key, w, f->nents, m2, sizeof(m2));
        free(w);
        vt_symcache_unlock(lk);
        if (rc && !first) {
            first = rc;
            snprintf(msg, len, "%s", m2);
        }
        if (!rc)
            f->nnew = 0;
    }
    return first;
}

static int add_line(vt_symres *r, const char *fn, const char *file, int line, int inlined)
{
    vt_symline *nl = realloc(r->lines, (r->nlines + 1) * sizeof(*nl));
    if (!nl)
        return -1;
    r->lines = nl;
    vt_symline *l = &nl[r->nlines++];
    l->function = demangle(fn);
    l->file = file ? strdup(file) : NULL;
    l->line = line > 0 ? (uint32_t)line : 0;
    l->inlined = inlined;
    return 0;
}

static void resolve(vt_symfile *f, uint64_t rel, vt_symres *r)
{
    Dwarf_Addr addr = rel, bias = 0;
    GElf_Sym sym;
    GElf_Off off = 0;
    if (!f->symtab_tried) {
        f->symtab_tried = 1;
        f->symtab = vt_symtab_build(f->mod);
    }
    int decided = 0;
    const char *symname = f->symtab ? vt_symtab_lookup(f->symtab, addr, &decided) : NULL;
    if (!decided)
        symname = dwfl_module_addrinfo(f->mod, addr, &off, &sym, NULL, NULL, NULL);
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(f->mod, addr);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
    Dwarf_Die *cu = dwfl_module_addrdie(f->mod, addr, &bias);
    if (cu) {
        /* dwarf_getscopes' answer from the unit's tree walked once; libdw
         * itself where the index cannot tell */
        Dwarf_Die path[256], *scopes = NULL;
        if (!f->scopes)
            f->scopes = vt_scopes_new();
        int n = f->scopes ? vt_scopes_get(f->scopes, cu, addr - bias, path, 256) : -2;
        int fast = n != -2;
        if (fast)
            scopes = path;
        else
            n = dwarf_getscopes(cu, addr - bias, &scopes);
        Dwarf_Files *files = NULL;
        size_t nfiles = 0;
        if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
            files = NULL;
        int i = 0;
        for (; i < n; i++) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
                break;
        }
        if (i < n) {
            Dwarf_Die die = scopes[i];
            int tag = dwarf_tag(&die);
            const char *fn = die_name(&die);
            add_line(r, fn ? fn : (tag == DW_TAG_subprogram ? symname : NULL), file, line,
                     tag == DW_TAG_inlined_subroutine);
            if (tag == DW_TAG_inlined_subroutine) {
                /* dwarf_getscopes continues into the inline's abstract
                 * definition; the physical callers come from the DIE's own
                 * nesting, each inline's caller at its DW_AT_call_* */
                Dwarf_Die *chain = NULL;
                int nc = fast ? n - i : dwarf_getscopes_die(&die, &chain);
                if (fast)
                    chain = scopes + i; /* the path is the DIE's own nesting */
                Dwarf_Die prev = die;
                for (int j = 1; j < nc; j++) {
                    int t2 = dwarf_tag(&chain[j]);
                    if (t2 != DW_TAG_inlined_subroutine && t2 != DW_TAG_subprogram)
                        continue;
                    Dwarf_Attribute at;
                    Dwarf_Word w;
                    const char *cf = NULL;
                    int cl = 0;
                    if (files && dwarf_attr(&prev, DW_AT_call_file, &at) && dwarf_formudata(&at, &w) == 0)
                        cf = dwarf_filesrc(files, w, NULL, NULL);
                    if (dwarf_attr(&prev, DW_AT_call_line, &at) && dwarf_formudata(&at, &w) == 0)
                        cl = (int)w;
                    const char *fn2 = die_name(&chain[j]);
                    add_line(r, fn2 ? fn2 : (t2 == DW_TAG_subprogram ? symname : NULL), cf, cl,
                             t2 == DW_TAG_inlined_subroutine);
                    prev = chain[j];
                    if (t2 == DW_TAG_subprogram)
                        break;
                }
                if (!fast)
                    free(chain);
            }
        }
        if (!fast)
            free(scopes);
    }
    if (r->nlines == 0) {
        if (!symname && !file) {
            r->status = VT_SYM_NO_SYMBOL;
            return;
        }
        add_line(r, symname, file, line, 0);
    }
    r->status = file ? VT_SYM_OK : VT_SYM_NO_DEBUG_INFO;
}

uint64_t vt_symbols_bid_hash(const uint8_t *bid, uint32_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ bid[i]) * 1099511628211ull;
    return h | 1; /* never 0 */
}

uint64_t vt_symbols_key(uint64_t bidh, uint64_t rel)
{
    return (bidh ^ (rel * 0x9E3779B97F4A7C15ull)) | 1;
}

int vt_symbolizer_add_travel(vt_symbolizer *s, uint64_t bidh, uint64_t rel, const vt_symres *r)
{
    uint64_t key = vt_symbols_key(bidh, rel);
    if (vt_map_get(&s->travel_map, key))
        return 0; /* the first one counts (the same binary, the same answer) */
    if (VT_GROW(s->travel, s->ntravel, s->captravel, 256))
        return VT_ERR_NOMEM;
    vt_travel *t = &s->travel[s->ntravel];
    memset(t, 0, sizeof(*t));
    t->bidh = bidh;
    t->rel = rel;
    t->r.status = r->status;
    for (uint32_t i = 0; i < r->nlines; i++) {
        vt_symline *nl = realloc(t->r.lines, (t->r.nlines + 1) * sizeof(*nl));
        if (!nl) {
            res_free(&t->r);
            return VT_ERR_NOMEM;
        }
        t->r.lines = nl;
        vt_symline *l = &nl[t->r.nlines++];
        l->function = r->lines[i].function ? strdup(r->lines[i].function) : NULL;
        l->file = r->lines[i].file ? strdup(r->lines[i].file) : NULL;
        l->line = r->lines[i].line;
        l->inlined = r->lines[i].inlined;
    }
    if (vt_map_put(&s->travel_map, key, s->ntravel + 1) || vt_map_put(&s->travel_bids, bidh | 1, 1)) {
        vt_map_del(&s->travel_map, key, NULL);
        res_free(&t->r);
        return VT_ERR_NOMEM;
    }
    s->ntravel++;
    return 0;
}

void vt_symbolizer_saw_travel(vt_symbolizer *s)
{
    s->travel_seen = 1;
}

/* what travelled for (bid, rel), or NULL */
static const vt_symres *travel_find(vt_symbolizer *s, const uint8_t *bid, uint32_t bid_len, uint64_t rel)
{
    if (!s->ntravel || !bid_len)
        return NULL;
    uint64_t bidh = vt_symbols_bid_hash(bid, bid_len);
    uint64_t *v = vt_map_get(&s->travel_map, vt_symbols_key(bidh, rel));
    if (!v)
        return NULL;
    const vt_travel *t = &s->travel[*v - 1];
    return t->bidh == bidh && t->rel == rel ? &t->r : NULL;
}

int vt_symbolizer_cached(vt_symbolizer *s, const char *path, const uint8_t *bid, uint32_t bid_len, uint64_t rel)
{
    if (!path || !*path)
        return 1; /* nothing to open: the answer is known */
    vt_symfile *f = get_file(s, path, bid, bid_len);
    if (!f)
        return 0;
    cache_read(s, f);
    return vt_map_get(&f->cache, rel + 1) != NULL;
}

const vt_symres *vt_symbolizer_lookup(vt_symbolizer *s, const char *path, const uint8_t *bid,
                                      uint32_t bid_len, uint64_t rel)
{
    if (!path || !*path)
        return &s->fail[VT_SYM_NO_MODULE];
    vt_symfile *f = get_file(s, path, bid, bid_len);
    if (f) {
        cache_read(s, f);
        uint64_t *v = vt_map_get(&f->cache, rel + 1);
        if (v) {
            s->st.cache_hits += f->cached > 0;
            return &s->res[*v - 1];
        }
        ensure_open(s, f);
    }
    if (!f || f->status != VT_SYM_OK) {
        /* the binary is not here (or another build): what the recording
         * host resolved, when it travelled with the trace */
        const vt_symres *t = travel_find(s, bid, bid_len, rel);
        if (t)
            return t;
        /* A .sym holds every address its host resolved: one absent from
         * it had no symbol there when the module is in it, else the
         * module was not resolved there at all.  Not "binary not found",
         * which would send the reader looking for a binary in vain. */
        if ((s->ntravel || s->travel_seen) && bid_len) {
            int in_sym = vt_map_get(&s->travel_bids, vt_symbols_bid_hash(bid, bid_len) | 1) != NULL;
            return &s->fail[in_sym ? VT_SYM_NO_SYMBOL : VT_SYM_UNRESOLVED_THERE];
        }
        return &s->fail[f ? f->status : VT_SYM_NOT_FOUND];
    }
    if (VT_GROW(s->res, s->nres, s->capres, 256))
            return &s->fail[VT_SYM_NOT_FOUND];
    vt_symres *r = &s->res[s->nres];
    memset(r, 0, sizeof(*r));
    resolve(f, rel, r);
    s->st.resolved++;
    if (file_add(f, rel, s->nres, 1))
        return r;
    s->nres++;
    return r;
}
