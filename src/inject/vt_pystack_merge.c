/* vt_pystack_merge.c - where the interpreter evaluates frames (its eval
 * function ranges) and the merge of a native stack with the Python frames. */
#include "vt_pystack_int.h"
/* ---- eval ranges and merge ---- */

int vt_pystack_test_add_eval(uint64_t start, uint64_t end)
{
    if (g_py.neval >= MAX_EVAL_RANGES)
        return VT_ERR_NOSPACE;
    g_py.eval_start[g_py.neval] = start;
    g_py.eval_end[g_py.neval] = end;
    g_py.neval++;
    return 0;
}

/* ip is a return address: the call lies in (start, end]. */
VT_AI int in_ranges(uint64_t ip, int n, const uint64_t *start, const uint64_t *end)
{
    for (int i = 0; i < n; i++)
        if (ip - start[i] - 1 < end[i] - start[i])
            return 1;
    return 0;
}

int vt_pystack_is_eval(uint64_t ip) { return in_ranges(ip, g_py.neval, g_py.eval_start, g_py.eval_end); }

int vt_pystack_eval_ranges(uint64_t *start, uint64_t *end, int max)
{
    for (int i = 0; i < g_py.neval && i < max; i++) {
        start[i] = g_py.eval_start[i];
        end[i] = g_py.eval_end[i];
    }
    return g_py.neval;
}

int vt_pystack_test_set_interp(uint64_t start, uint64_t end)
{
    g_py.interp_lo = start;
    g_py.interp_hi = end;
    return 0;
}

/* The executable PT_LOAD segment that holds `addr` (the interpreter's code). */
int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t addr = *(uint64_t *)arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && addr >= lo && addr < lo + ph->p_memsz) {
            g_py.interp_lo = lo;
            g_py.interp_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

void add_eval_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!p || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
        return;
    vt_pystack_test_add_eval((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + sym->st_size);
}

int vt_pystack_merge(const uint64_t *ips, int nips, const vt_pyframe *py, int npy,
                     vt_frame *out, int max)
{
    int n = 0, pi = 0, pending = 0;
    int truncated = npy > 0 && (py[npy - 1].flags & VT_PYFRAME_TRUNCATED);
    /* local copies: stores to out[] cannot alias them */
    uint64_t es[MAX_EVAL_RANGES], ee[MAX_EVAL_RANGES];
    const int ne = g_py.neval;
    memcpy(es, g_py.eval_start, sizeof es);
    memcpy(ee, g_py.eval_end, sizeof ee);
    int anyeval = 0;
    for (int i = 0; i < nips && !anyeval; i++)
        anyeval = in_ranges(ips[i], ne, es, ee);
    if (!anyeval && npy > 0) {
        /* No eval frame recognised (a stripped or cloned eval loop, or an
         * unwind that stopped early): the Python frames go where the stack
         * first enters the interpreter's code, else after the native ones. */
        int at = nips;
        for (int i = 0; i < nips && g_py.interp_hi; i++)
            if (ips[i] - 1 - g_py.interp_lo < g_py.interp_hi - g_py.interp_lo) {
                at = i;
                break;
            }
        for (int i = 0; i < at && n < max; i++)
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
        for (int i = 0; i < npy && n < max; i++)
            out[n++] = (vt_frame){.pc = py[i].key, .line = py[i].line, .kind = VT_FRAME_PYTHON};
        for (int i = at; i < nips && n < max; i++)
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
        return n;
    }
    for (int i = 0; i < nips && n < max; i++) {
        if (!in_ranges(ips[i], ne, es, ee)) {
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
            continue;
        }
        if (pending > 0) { /* an eval call whose Python frames were all hidden */
            pending--;
            continue;
        }
        if (pi >= npy) {
            if (!truncated)
                out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
            continue;
        }
        while (pi < npy && n < max) {
            const vt_pyframe *p = &py[pi++];
            out[n++] = (vt_frame){.pc = p->key, .line = p->line, .kind = VT_FRAME_PYTHON};
            if (p->nentry) {
                pending = p->nentry - 1;
                break;
            }
        }
    }
    while (pi < npy && n < max) {
        const vt_pyframe *p = &py[pi++];
        out[n++] = (vt_frame){.pc = p->key, .line = p->line, .kind = VT_FRAME_PYTHON};
    }
    return n;
}

int vt_pystack_stack(const uint64_t *ips, int nips, vt_frame *out, int max, int pydepth,
                     vt_pystack_define_fn define, void *ctx)
{
    vt_pyframe py[VT_PYSTACK_MAX_DEPTH];
    if (pydepth > VT_PYSTACK_MAX_DEPTH)
        pydepth = VT_PYSTACK_MAX_DEPTH;
    int npy = vt_pystack_capture(py, pydepth);
    if (npy < 0)
        return npy;
    return vt_pystack_finish(ips, nips, py, npy, out, max, define, ctx);
}

VT_HOT int vt_pystack_finish(const uint64_t *ips, int nips, const vt_pyframe *py, int npy, vt_frame *out, int max,
                      vt_pystack_define_fn define, void *ctx)
{
    uint64_t *seen = t_seen; /* one TLS lookup, not one per frame */
    __asm__("" : "+r"(seen));
    for (int i = 0; define && i < npy; i++) {
        if (seen_in(seen, py[i].key))
            continue;
        char file[512], func[256];
        describe(0, py[i].code, file, sizeof file, func, sizeof func);
        if (define(ctx, py[i].key, file, func) < 0)
            vt_pystack_unsee(py[i].key);
    }
    return vt_pystack_merge(ips, nips, py, npy, out, max);
}
