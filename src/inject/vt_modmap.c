/* vt_modmap.c - the module map: the loaded objects (dl_iterate_phdr), their
 * address ranges and build ids, sorted for lookups.  May touch: the loaded
 * objects' program headers. */
#include "vt_unwind_int.h"
typedef struct {
    vt_module *mods;
    size_t n, cap;
    char **paths;
} scan_ctx;

static void read_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, vt_module *m)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        size_t namesz = (nh->n_namesz + 3u) & ~3u, descsz = (nh->n_descsz + 3u) & ~3u;
        const uint8_t *name = p + sizeof(*nh), *desc = name + namesz;
        if (desc + descsz > end)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            uint32_t len = nh->n_descsz > VT_BUILD_ID_MAX ? VT_BUILD_ID_MAX : nh->n_descsz;
            memcpy(m->build_id, desc, len);
            m->build_id_len = len;
            return;
        }
        p = desc + descsz;
    }
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan_ctx *c = arg;
    (void)size;
    vt_module m;
    memset(&m, 0, sizeof(m));
    m.load_bias = info->dlpi_addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
            if (s < lo) lo = s;
            if (e > hi) hi = e;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.eh_frame_hdr = info->dlpi_addr + ph->p_vaddr;
        } else if (ph->p_type == PT_NOTE && m.build_id_len == 0) {
            read_build_id(info, ph, &m);
        }
    }
    if (hi <= lo)
        return 0;
    m.start = lo;
    m.end = hi;
    const char *path = info->dlpi_name;
    char exe[4096];
    if (!path || !*path) {
        /* the main program (or the vdso, which has a name on modern glibc) */
        ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[k > 0 ? k : 0] = 0;
        path = exe;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        vt_module *nm = realloc(c->mods, cap * sizeof(*nm));
        char **np = realloc(c->paths, cap * sizeof(*np));
        if (nm) c->mods = nm;
        if (np) c->paths = np;
        if (!nm || !np)
            return 1;
        c->cap = cap;
    }
    c->paths[c->n] = strdup(path);
    if (!c->paths[c->n])
        return 1;
    c->mods[c->n++] = m;
    return 0;
}

static int mod_cmp(const void *a, const void *b)
{
    const vt_module *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int vt_modmap_scan(vt_modmap **out)
{
    scan_ctx c = {0};
    vt_modmap *m = NULL;
    int rc = VT_ERR_NOMEM;
    *out = NULL;
    if (dl_iterate_phdr(scan_cb, &c) != 0)
        goto cleanup;
    size_t total = 0;
    for (size_t i = 0; i < c.n; i++)
        total += strlen(c.paths[i]) + 1;
    m = calloc(1, sizeof(*m));
    if (!m)
        goto cleanup;
    m->strings = malloc(total ? total : 1);
    m->mods = calloc(c.n ? c.n : 1, sizeof(vt_module));
    if (!m->strings || !m->mods)
        goto cleanup;
    char *s = m->strings;
    for (size_t i = 0; i < c.n; i++) {
        size_t l = strlen(c.paths[i]) + 1;
        memcpy(s, c.paths[i], l);
        c.mods[i].path = s;
        s += l;
    }
    memcpy(m->mods, c.mods, c.n * sizeof(vt_module));
    m->n = c.n;
    qsort(m->mods, m->n, sizeof(vt_module), mod_cmp);
    *out = m;
    m = NULL;
    rc = 0;
cleanup:
    for (size_t i = 0; i < c.n; i++)
        free(c.paths[i]);
    free(c.paths);
    free(c.mods);
    vt_modmap_free(m);
    return rc;
}

void vt_modmap_free(vt_modmap *m)
{
    if (!m)
        return;
    free(m->mods);
    free(m->strings);
    free(m);
}

size_t vt_modmap_count(const vt_modmap *m) { return m ? m->n : 0; }
const vt_module *vt_modmap_get(const vt_modmap *m, size_t i) { return m && i < m->n ? &m->mods[i] : NULL; }

const vt_module *vt_modmap_find(const vt_modmap *m, uint64_t addr)
{
    if (!m || m->n == 0)
        return NULL;
    size_t lo = 0, hi = m->n; /* last module with start <= addr */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->mods[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const vt_module *mod = &m->mods[lo - 1];
    return addr < mod->end ? mod : NULL;
}
