/* vt_sites.c - call sites: expanding an interned stack into printable
 * frames (symbolizing native ones, inlines included), choosing the user's
 * own frame, and the process-independent key used to merge processes and
 * to diff traces.  Touches only analysis state. */
#include "vt_escape.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_report_int.h"

static const char *base_name(const char *p)
{
    if (!p)
        return NULL;
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* Libraries whose frames are never "the user's own": the tracer, the CUDA
 * stack, the C/C++ runtimes, the interpreter and the frameworks. */
static int internal_module(const char *path)
{
    static const char *const prefixes[] = {
        "libvramtrace", "libvt_torch", "libcuda.", "libcuda-", "libcudart", "libcupti", "libc.so", "libc-", "libstdc++",
        "libgcc_s", "ld-linux", "libpthread", "libdl.", "libm.so", "libtorch", "libc10", "libpython",
        "python", "libnccl", "libcublas", "libcudnn", "libnvrtc", "libnvJitLink", "libcufft", "libcurand",
        "libcusparse", "libcusolver", "libnvidia", "_C.cpython", "libshm", "libgomp", "libtriton",
        "_ctypes.", "libffi", /* ctypes: CuPy's memory hook calling the library */
    };
    const char *b = base_name(path);
    if (!b || !*b)
        return 1;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (!strncmp(b, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

static int internal_function(const char *fn)
{
    static const char *const prefixes[] = {
        "cuda", "__cuda", "cudart::", "__cudart", "libcudart_static", "vt_", "vramtrace", "c10::", "at::", "torch::",
        "std::",
        "__libc", "__GI_", "_start", "__gnu_cxx::", "operator new", "pybind11::", "_Py", "Py",
    };
    if (!fn)
        return 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (!strncmp(fn, prefixes[i], strlen(prefixes[i])))
            return 1;
    /* driver API: cuMemAlloc_v2, cuLaunchKernel... */
    if (fn[0] == 'c' && fn[1] == 'u' && isupper((unsigned char)fn[2]))
        return 1;
    return 0;
}

static int internal_python_file(const char *file)
{
    if (!file)
        return 1;
    /* vramtrace's own Python (src/python: CuPy's memory hook calls the
     * library from vramtrace_cupy.py, under the user's line) */
    if (!strncmp(base_name(file), "vramtrace_", 10))
        return 1;
    return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") || strstr(file, "/lib/python") ||
           !strncmp(file, "<frozen", 7);
}

uint32_t vt_site_frames(vt_analysis *a, const vt_proc *p, uint32_t stack, vt_xframe *out, uint32_t max,
                        int *user)
{
    uint32_t fr[VT_MAX_STACK];
    uint32_t depth = vt_proc_stack(p, stack, fr, VT_MAX_STACK);
    if (depth > VT_MAX_STACK)
        depth = VT_MAX_STACK;
    uint32_t n = 0;
    int upy = -1, unat = -1, anypy = -1;
    for (uint32_t i = 0; i < depth && n < max; i++) {
        const vt_pframe *f = fr[i] < p->nframes ? &p->frames[fr[i]] : NULL;
        vt_xframe *x = &out[n];
        memset(x, 0, sizeof(*x));
        if (!f) {
            x->status = VT_SYM_NO_MODULE;
            x->internal = 1;
            n++;
            continue;
        }
        if (f->kind == VT_FRAME_PYTHON) {
            x->python = 1;
            x->function = vt_proc_string(p, f->function);
            x->file = vt_proc_string(p, f->file);
            x->line = f->line;
            x->internal = internal_python_file(x->file);
            if (anypy < 0)
                anypy = (int)n;
            if (upy < 0 && !x->internal)
                upy = (int)n;
            n++;
            continue;
        }
        const vt_pmodule *m = f->module && f->module < p->nmodules && p->modules[f->module].path
                                  ? &p->modules[f->module] : NULL;
        x->module = m ? m->path : NULL;
        x->offset = m ? f->ip - m->load_bias : f->ip;
        const vt_symres *r = NULL;
        if (!m)
            x->status = VT_SYM_NO_MODULE;
        else if (!a->cfg.symbolize || !a->sym)
            x->status = VT_SYM_DISABLED;
        else {
            /* return addresses point after the call: look up the call itself */
            uint64_t rel = x->offset - (i > 0 && x->offset ? 1 : 0);
            r = vt_symbolizer_lookup(a->sym, m->path, m->build_id, m->build_id_len, rel);
            x->status = r->status;
        }
        int internal = m ? internal_module(m->path) : 1;
        if (r && r->nlines) {
            uint32_t first = n;
            for (uint32_t k = 0; k < r->nlines && n < max; k++, n++) {
                vt_xframe *y = &out[n];
                *y = out[first];
                y->function = r->lines[k].function;
                y->file = r->lines[k].file;
                y->line = r->lines[k].line;
                y->inlined = r->lines[k].inlined;
                y->status = r->status;
                y->internal = internal || internal_function(y->function);
                if (unat < 0 && !y->internal)
                    unat = (int)n;
            }
            continue;
        }
        x->internal = internal;
        if (unat < 0 && !internal)
            unat = (int)n;
        n++;
    }
    if (user)
        *user = upy >= 0 ? upy : unat >= 0 ? unat : anypy >= 0 ? anypy : (n ? 0 : -1);
    return n;
}

int vt_site_operator(const vt_xframe *fr, uint32_t n, char *op, size_t oplen, char *node, size_t nodelen)
{
    static const char ops[] = "at::_ops::", gen[] = "torch::autograd::generated::";
    if (oplen)
        op[0] = 0;
    if (nodelen)
        node[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *f = fr[i].python ? NULL : fr[i].function;
        if (!f)
            continue;
        if (!strncmp(f, ops, sizeof(ops) - 1)) { /* at::_ops::mm::call(...): the outermost wins */
            const char *nm = f + sizeof(ops) - 1;
            size_t k = strcspn(nm, ":(< ");
            if (k && oplen)
                snprintf(op, oplen, "aten::%.*s", (int)k, nm);
        } else if (nodelen && !node[0] && !strncmp(f, gen, sizeof(gen) - 1)) {
            const char *nm = f + sizeof(gen) - 1;
            size_t k = strcspn(nm, ":(< ");
            if (k && !strncmp(nm + k, "::apply", 7))
                snprintf(node, nodelen, "%.*s", (int)k, nm);
        }
    }
    return (oplen && op[0]) || (nodelen && node[0]);
}

/* names escaped for a terminal (vt_escape.h): the line goes into text
 * reports, diff and the exporters' slice names */
void vt_xframe_format(const vt_xframe *f, char *buf, size_t len)
{
    char fn[1024], file[1024], mod[512];
    vt_esc_text_buf(f->function ? f->function : "?", fn, sizeof(fn));
    vt_esc_text_buf(f->file ? f->file : "?", file, sizeof(file));
    vt_esc_text_buf(f->module ? base_name(f->module) : "?", mod, sizeof(mod));
    if (f->python) {
        snprintf(buf, len, "%s (%s:%u)", fn, file, f->line);
        return;
    }
    if (f->function) {
        if (f->file)
            snprintf(buf, len, "%s (%s:%u)%s in %s", fn, file, f->line, f->inlined ? " [inlined]" : "", mod);
        else
            snprintf(buf, len, "%s in %s+0x%llx (%s)", fn, mod, (unsigned long long)f->offset,
                     vt_sym_status_name(f->status));
        return;
    }
    snprintf(buf, len, "%s+0x%llx (%s)", mod, (unsigned long long)f->offset, vt_sym_status_name(f->status));
}

/* key: "<kind>|" + frames joined by ';' (raw frames, not symbolized: the
 * same code gives the same key in every process whatever its load address) */
const char *vt_unit_key(vt_analysis *a, vt_proc *p, uint32_t unit)
{
    vt_unit *u = &p->units[unit];
    (void)a;
    if (u->key)
        return u->key;
    uint32_t fr[VT_MAX_STACK];
    uint32_t depth = vt_proc_stack(p, u->stack, fr, VT_MAX_STACK);
    if (depth > 64)
        depth = 64;
    size_t cap = 64 + depth * 96, len = 0;
    char *k = malloc(cap);
    if (!k)
        return "";
    len += (size_t)snprintf(k, cap, "%s|", vt_memkind_name((vt_memkind)u->kind));
    for (uint32_t i = 0; i < depth && len < cap; i++) {
        const vt_pframe *f = fr[i] < p->nframes ? &p->frames[fr[i]] : NULL;
        char part[600];
        if (!f)
            snprintf(part, sizeof(part), "?");
        else if (f->kind == VT_FRAME_PYTHON) {
            const char *file = vt_proc_string(p, f->file), *fn = vt_proc_string(p, f->function);
            snprintf(part, sizeof(part), "py:%.250s:%.250s:%u", file ? file : "?", fn ? fn : "?", f->line);
        } else if (f->module && f->module < p->nmodules && p->modules[f->module].path) {
            const vt_pmodule *m = &p->modules[f->module];
            snprintf(part, sizeof(part), "%.250s+0x%llx", base_name(m->path),
                     (unsigned long long)(f->ip - m->load_bias));
        } else
            snprintf(part, sizeof(part), "?+0x%llx", (unsigned long long)f->ip);
        size_t pl = strlen(part);
        if (len + pl + 2 >= cap) {
            size_t nc = (len + pl + 2) * 2;
            char *nk = realloc(k, nc);
            if (!nk)
                break;
            k = nk;
            cap = nc;
        }
        if (i)
            k[len++] = ';';
        memcpy(k + len, part, pl + 1);
        len += pl;
    }
    u->key = k;
    return k;
}

const char *vt_unit_meaning_key(vt_analysis *a, vt_proc *p, uint32_t unit)
{
    vt_unit *u = &p->units[unit];
    if (u->mkey)
        return u->mkey;
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, u->stack, fr, VT_MAX_STACK, &user);
    size_t cap = 256, len = 0;
    char *k = malloc(cap);
    if (!k)
        return "";
    len = (size_t)snprintf(k, cap, "%s|", vt_memkind_name((vt_memkind)u->kind));
    int any = 0;
    /* no frame of the user's: the thread and the libraries it went
     * through (a framework frame's offset or symbol differs between
     * builds and between traces read with and without symbols) */
    int own = 0;
    for (uint32_t i = 0; i < n; i++)
        own |= !fr[i].internal;
    if (!own && n) {
        uint32_t tid;
        const char *tname = rep_thread_name(p, u->thread, &tid);
        char libs[600] = "";
        size_t ll = 0;
        for (uint32_t i = 0; i < n && ll + 2 < sizeof(libs); i++) {
            const char *m = fr[i].python ? "python" : fr[i].module ? base_name(fr[i].module) : "?";
            if (!strstr(libs, m))
                ll += (size_t)snprintf(libs + ll, sizeof(libs) - ll, "%s%s", ll ? "," : "", m);
        }
        char *nk = realloc(k, len + strlen(libs) + 300);
        if (nk) {
            k = nk;
            snprintf(k + len, 300 + strlen(libs), "thread %.200s;%s", tname ? tname : "?", libs);
        }
        u->mkey = k;
        return k;
    }
    for (uint32_t i = 0; i < n; i++) {
        const vt_xframe *x = &fr[i];
        if (x->internal)
            continue;
        char one[700];
        if (x->python)
            snprintf(one, sizeof(one), "%s:%s:%u", x->file ? x->file : "?", x->function ? x->function : "?", x->line);
        else if (x->function)
            snprintf(one, sizeof(one), "%s", x->function);
        else
            snprintf(one, sizeof(one), "%s", x->module ? base_name(x->module) : "?");
        size_t l = strlen(one);
        if (len + l + 2 > cap) {
            while (len + l + 2 > cap)
                cap *= 2;
            char *nk = realloc(k, cap);
            if (!nk)
                break;
            k = nk;
        }
        len += (size_t)snprintf(k + len, cap - len, "%s%s", any ? ";" : "", one);
        any = 1;
    }
    u->mkey = k;
    return k;
}
