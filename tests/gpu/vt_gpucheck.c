/* vt_gpucheck.c - checks a trace recorded on the GPU machine against the
 * expectations printed by the test program (lines "VT_EXPECT ...").
 * Uses src/core's reader only, and a tiny ELF symbol lookup (.symtab, else
 * .dynsym) of the module files named in the trace, so it runs wherever the
 * traced binaries are.  Used by scripts/gpu-test.sh; not a CPU test.
 *
 *   vt_gpucheck TRACE EXPECTFILE      exit 0 if every expectation holds
 *   vt_gpucheck TRACE                 summary only
 *   vt_gpucheck --no-symbols TRACE EXPECTFILE
 *       without the traced binaries (CI replay of tests/data): a FUNC
 *       expectation only needs a non-empty stack
 *
 * Expectation lines (after the "VT_EXPECT " prefix; hex addresses 0x...):
 *   alloc API ADDR SIZE FUNC     an Alloc of that api/address/size whose stack
 *                                has a frame in a symbol containing FUNC ("-": any)
 *   free ADDR                    an Alloc of ADDR was freed (addresses are reused: any of them)
 *   leak ADDR                    the last Alloc of ADDR was never freed
 *   failed API SIZE FUNC         an AllocFailed (size, api, stack frame FUNC)
 *   vmm_create SIZE FUNC         a VmmCreate of SIZE (stack frame FUNC)
 *   vmm_reserve ADDR SIZE        a VmmReserve
 *   vmm_map ADDR SIZE            a VmmMap
 *   count TYPE[:API] OP N        number of events of TYPE (evtype name) [with api] OP (>=,<=,==) N
 *   kernel SUBSTR OP N           kernels whose name contains SUBSTR
 *   kernel_all SUBSTR FIELD V    there are such kernels, and each has FIELD == V:
 *                                smem (static + dynamic bytes), graph (0|1),
 *                                timed (1: a GPU duration, 0: none)
 *   nvtx MESSAGE                 an NVTX push/start/mark with that message
 *   complete 0|1                 the trace ends with an End record (1) or not (0)
 *   end_signal SIG               the End record says signal SIG
 *   threads OP N                 distinct threads among allocations
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_event.h"
#include "vt_reader.h"

typedef struct {
    int type;
    uint64_t addr, size, handle;
    int api;
    uint32_t stack, tid;
    uint64_t time;
    int freed;
    const char *errname;
} ev_rec;

static ev_rec *evs;
static size_t nev, capev;
static uint64_t counts[VT_EV__MAX];
static uint64_t api_counts[VT_EV__MAX][VT_API__COUNT];
typedef struct {
    char *name;
    uint64_t attr[3]; /* kernel_all's fields, in kern_fields' order */
} kern_rec;
static const char *const kern_fields[3] = {"smem", "graph", "timed"};
static kern_rec *kernels;
static size_t nkern, capkern;
static char **nvtx_msgs;
static size_t nnvtx, capnvtx;
static int complete, end_signal = -1;
static vt_reader *R;
static int no_symbols;

/* ------------------------------------------------------------ symbols */
typedef struct { uint64_t lo, hi; const char *name; } sym;
typedef struct { char *path; sym *s; size_t n; } modsyms;
static modsyms mods[256];
static size_t nmods;

static int symcmp(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static modsyms *load_syms(const char *path)
{
    for (size_t i = 0; i < nmods; i++)
        if (strcmp(mods[i].path, path) == 0)
            return &mods[i];
    if (nmods == 256)
        return NULL;
    modsyms *m = &mods[nmods++];
    m->path = strdup(path);
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return m;
    }
    const uint8_t *d = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d == MAP_FAILED)
        return m;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
    if ((size_t)st.st_size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, 4) != 0)
        return m;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh->e_shoff);
    for (int pass = 0; pass < 2 && m->n == 0; pass++) {
        uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (int i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != want)
                continue;
            const Elf64_Sym *sy = (const Elf64_Sym *)(d + sh[i].sh_offset);
            size_t cnt = sh[i].sh_size / sizeof(Elf64_Sym);
            const char *strs = (const char *)(d + sh[sh[i].sh_link].sh_offset);
            m->s = realloc(m->s, (m->n + cnt) * sizeof(sym));
            for (size_t k = 0; k < cnt; k++) {
                if (ELF64_ST_TYPE(sy[k].st_info) != STT_FUNC || !sy[k].st_value)
                    continue;
                m->s[m->n].lo = sy[k].st_value;
                m->s[m->n].hi = sy[k].st_value + (sy[k].st_size ? sy[k].st_size : 1);
                m->s[m->n].name = strs + sy[k].st_name;
                m->n++;
            }
        }
    }
    qsort(m->s, m->n, sizeof(sym), symcmp);
    return m;
}

/* Symbol name of a native frame's ip ("" if unknown). Needs the ELF vaddr
 * of the ip: ip - load_bias (ip - 1: return addresses). */
static const char *symbolize(const vt_ev_frame *f)
{
    if (!f || f->kind != VT_FRAME_NATIVE)
        return "";
    const vt_ev_module *mod = vt_reader_module(R, f->module);
    if (!mod || !mod->path)
        return "";
    modsyms *m = load_syms(mod->path);
    if (!m || !m->n)
        return "";
    uint64_t a = f->ip - 1 - mod->load_bias;
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->s[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* the innermost symbol containing a: scan back a little for overlaps */
    for (size_t i = lo; i > 0 && i + 8 > lo; i--)
        if (a >= m->s[i - 1].lo && a < m->s[i - 1].hi)
            return m->s[i - 1].name;
    return "";
}

static int stack_has(uint32_t stack, const char *func, char *desc, size_t dlen)
{
    uint32_t fr[512];
    if (no_symbols)
        symbolize(NULL); /* keep the symbolizer linked in; unused */
    uint32_t n = vt_reader_stack(R, stack, fr, 512);
    if (n > 512)
        n = 512;
    size_t used = 0;
    if (desc && dlen)
        desc[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const vt_ev_frame *f = vt_reader_frame(R, fr[i]);
        const char *name;
        char pyname[256];
        if (f && f->kind == VT_FRAME_PYTHON) {
            const char *fn = vt_reader_string(R, f->function);
            snprintf(pyname, sizeof(pyname), "%s:%u", fn ? fn : "?", f->line);
            name = pyname;
        } else {
            name = symbolize(f);
        }
        if (desc && used + 64 < dlen)
            used += (size_t)snprintf(desc + used, dlen - used, "%s%s", i ? " < " : "", name[0] ? name : "?");
        if (strcmp(func, "-") == 0 || no_symbols || (name[0] && strstr(name, func)))
            return 1;
    }
    return strcmp(func, "-") == 0;
}

static ev_rec *add(int type)
{
    if (nev == capev) {
        capev = capev ? capev * 2 : 1024;
        evs = realloc(evs, capev * sizeof(*evs));
    }
    memset(&evs[nev], 0, sizeof(ev_rec));
    evs[nev].type = type;
    return &evs[nev++];
}

static void push_str(char ***arr, size_t *n, size_t *cap, const char *s)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *arr = realloc(*arr, *cap * sizeof(char *));
    }
    (*arr)[(*n)++] = strdup(s ? s : "");
}

static int cmp_op(uint64_t v, const char *op, uint64_t n)
{
    if (!strcmp(op, ">=")) return v >= n;
    if (!strcmp(op, "<=")) return v <= n;
    if (!strcmp(op, "==")) return v == n;
    if (!strcmp(op, ">")) return v > n;
    return 0;
}

static int evtype_of(const char *s)
{
    for (int t = 0; t < VT_EV__MAX; t++)
        if (!strcmp(vt_evtype_name((vt_evtype)t), s))
            return t;
    return -1;
}
static int api_of(const char *s)
{
    for (int a = 0; a < VT_API__COUNT; a++)
        if (!strcmp(vt_allocapi_name((vt_allocapi)a), s))
            return a;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--no-symbols")) {
        no_symbols = 1;
        argv++;
        argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: vt_gpucheck [--no-symbols] TRACE [EXPECTFILE]\n");
        return 2;
    }
    char err[512];
    if (vt_reader_open(&R, argv[1], err, sizeof(err)) != 0) {
        printf("FAIL open: %s\n", err);
        return 1;
    }
    vt_event ev;
    int rc;
    while ((rc = vt_reader_next(R, &ev)) == 1) {
        if (ev.type < VT_EV__MAX)
            counts[ev.type]++;
        switch (ev.type) {
        case VT_EV_ALLOC: {
            ev_rec *e = add(VT_EV_ALLOC);
            e->addr = ev.u.alloc.address;
            e->size = ev.u.alloc.size;
            e->api = ev.u.alloc.api;
            e->stack = ev.u.alloc.site.stack;
            e->tid = ev.u.alloc.site.tid;
            api_counts[VT_EV_ALLOC][ev.u.alloc.api % VT_API__COUNT]++;
            break;
        }
        case VT_EV_FREE: {
            api_counts[VT_EV_FREE][ev.u.free.api % VT_API__COUNT]++;
            for (size_t i = nev; i > 0; i--)
                if (evs[i - 1].type == VT_EV_ALLOC && evs[i - 1].addr == ev.u.free.address && !evs[i - 1].freed) {
                    evs[i - 1].freed = 1;
                    break;
                }
            ev_rec *e = add(VT_EV_FREE);
            e->addr = ev.u.free.address;
            break;
        }
        case VT_EV_ALLOC_FAILED: {
            ev_rec *e = add(VT_EV_ALLOC_FAILED);
            e->size = ev.u.alloc_failed.size;
            e->api = ev.u.alloc_failed.api;
            e->stack = ev.u.alloc_failed.site.stack;
            e->errname = ev.u.alloc_failed.error_name ? strdup(ev.u.alloc_failed.error_name) : NULL;
            api_counts[VT_EV_ALLOC_FAILED][ev.u.alloc_failed.api % VT_API__COUNT]++;
            break;
        }
        case VT_EV_VMM_CREATE: {
            ev_rec *e = add(VT_EV_VMM_CREATE);
            e->size = ev.u.vmm_create.size;
            e->handle = ev.u.vmm_create.handle;
            e->stack = ev.u.vmm_create.site.stack;
            break;
        }
        case VT_EV_VMM_RESERVE:
        case VT_EV_VMM_UNMAP:
        case VT_EV_VMM_ADDRESS_FREE: {
            ev_rec *e = add(ev.type);
            e->addr = ev.u.vmm_range.address;
            e->size = ev.u.vmm_range.size;
            break;
        }
        case VT_EV_VMM_MAP: {
            ev_rec *e = add(VT_EV_VMM_MAP);
            e->addr = ev.u.vmm_map.address;
            e->size = ev.u.vmm_map.size;
            break;
        }
        case VT_EV_KERNEL:
            if (nkern == capkern) {
                capkern = capkern ? 2 * capkern : 256;
                kernels = realloc(kernels, capkern * sizeof(*kernels));
            }
            kernels[nkern++] = (kern_rec){strdup(ev.u.kernel.name ? ev.u.kernel.name : ""),
                                          {ev.u.kernel.shared_memory, ev.u.kernel.graph != 0,
                                           ev.u.kernel.duration_ns != 0}};
            break;
        case VT_EV_NVTX:
            if (ev.u.nvtx.message)
                push_str(&nvtx_msgs, &nnvtx, &capnvtx, ev.u.nvtx.message);
            break;
        case VT_EV_NOTE:
            printf("note: %s\n", ev.u.note.text ? ev.u.note.text : "");
            break;
        case VT_EV_END:
            complete = 1;
            end_signal = ev.u.end.signal;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        printf("reader: %s\n", vt_reader_errmsg(R));
    printf("summary: allocs=%llu frees=%llu failed=%llu kernels=%llu vmm_create=%llu vmm_map=%llu pool=%llu "
           "pool_usage=%llu memory_usage=%llu nvtx=%llu devices=%llu modules=%llu stacks=%llu dropped=%llu complete=%d\n",
           (unsigned long long)counts[VT_EV_ALLOC], (unsigned long long)counts[VT_EV_FREE],
           (unsigned long long)counts[VT_EV_ALLOC_FAILED], (unsigned long long)counts[VT_EV_KERNEL],
           (unsigned long long)counts[VT_EV_VMM_CREATE], (unsigned long long)counts[VT_EV_VMM_MAP],
           (unsigned long long)counts[VT_EV_POOL], (unsigned long long)counts[VT_EV_POOL_USAGE],
           (unsigned long long)counts[VT_EV_MEMORY_USAGE], (unsigned long long)counts[VT_EV_NVTX],
           (unsigned long long)counts[VT_EV_DEVICE], (unsigned long long)counts[VT_EV_MODULE],
           (unsigned long long)counts[VT_EV_STACK], (unsigned long long)counts[VT_EV_DROPPED], complete);
    for (int a = 0; a < VT_API__COUNT; a++)
        if (api_counts[VT_EV_ALLOC][a])
            printf("  alloc api %s: %llu (frees %llu)\n", vt_allocapi_name((vt_allocapi)a),
                   (unsigned long long)api_counts[VT_EV_ALLOC][a], (unsigned long long)api_counts[VT_EV_FREE][a]);
    if (argc < 3)
        return rc < 0 && rc != -5 ? 1 : 0;

    FILE *f = fopen(argv[2], "r");
    if (!f) {
        printf("FAIL cannot open %s\n", argv[2]);
        return 1;
    }
    char line[1024];
    int total = 0, failed = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VT_EXPECT ", 10) != 0) /* at the start: "CHILD VT_EXPECT" is another process's */
            continue;
        char *p = line + 10;
        p[strcspn(p, "\r\n")] = 0;
        char w[6][256];
        memset(w, 0, sizeof(w));
        int nw = sscanf(p, "%255s %255s %255s %255s %255s %255s", w[0], w[1], w[2], w[3], w[4], w[5]);
        int ok = 0;
        char why[2048] = "";
        total++;
        if (!strcmp(w[0], "alloc") && nw >= 5) {
            int api = api_of(w[1]);
            uint64_t addr = strtoull(w[2], NULL, 0), size = strtoull(w[3], NULL, 0);
            for (size_t i = 0; i < nev && !ok; i++) {
                ev_rec *e = &evs[i];
                if (e->type != VT_EV_ALLOC || e->addr != addr)
                    continue;
                if (e->size != size || e->api != api) {
                    snprintf(why, sizeof(why), "found size %llu api %s", (unsigned long long)e->size,
                             vt_allocapi_name((vt_allocapi)e->api));
                    continue;
                }
                ok = stack_has(e->stack, w[4], why, sizeof(why));
                if (!ok) {
                    char tmp[2048];
                    snprintf(tmp, sizeof(tmp), "stack: %.2000s", why);
                    memcpy(why, tmp, sizeof(why));
                }
            }
        } else if (!strcmp(w[0], "free") || !strcmp(w[0], "leak")) {
            uint64_t addr = strtoull(w[1], NULL, 0);
            int found = 0, freed = 0, any_freed = 0;
            for (size_t i = 0; i < nev; i++)
                if (evs[i].type == VT_EV_ALLOC && evs[i].addr == addr) {
                    found = 1;
                    freed = evs[i].freed;
                    any_freed |= freed;
                }
            ok = found && (w[0][0] == 'f' ? any_freed : !freed);
            snprintf(why, sizeof(why), "found=%d freed=%d", found, freed);
        } else if (!strcmp(w[0], "failed") && nw >= 4) {
            int api = api_of(w[1]);
            uint64_t size = strtoull(w[2], NULL, 0);
            for (size_t i = 0; i < nev && !ok; i++) {
                ev_rec *e = &evs[i];
                if (e->type != VT_EV_ALLOC_FAILED || e->size != size || e->api != api)
                    continue;
                ok = e->errname && e->errname[0] && stack_has(e->stack, w[3], why, sizeof(why));
                if (ok)
                    printf("  failed alloc: %s\n", e->errname);
            }
        } else if (!strcmp(w[0], "vmm_create") && nw >= 3) {
            uint64_t size = strtoull(w[1], NULL, 0);
            for (size_t i = 0; i < nev && !ok; i++)
                if (evs[i].type == VT_EV_VMM_CREATE && evs[i].size == size)
                    ok = stack_has(evs[i].stack, w[2], why, sizeof(why));
        } else if ((!strcmp(w[0], "vmm_reserve") || !strcmp(w[0], "vmm_map")) && nw >= 3) {
            int t = w[0][4] == 'r' ? VT_EV_VMM_RESERVE : VT_EV_VMM_MAP;
            uint64_t addr = strtoull(w[1], NULL, 0), size = strtoull(w[2], NULL, 0);
            for (size_t i = 0; i < nev && !ok; i++)
                ok = evs[i].type == t && evs[i].addr == addr && evs[i].size == size;
        } else if (!strcmp(w[0], "count") && nw >= 4) {
            char *colon = strchr(w[1], ':');
            int api = -1;
            if (colon) {
                *colon = 0;
                api = api_of(colon + 1);
            }
            int t = evtype_of(w[1]);
            uint64_t v = t < 0 ? 0 : api >= 0 ? api_counts[t][api] : counts[t];
            ok = t >= 0 && cmp_op(v, w[2], strtoull(w[3], NULL, 0));
            snprintf(why, sizeof(why), "value %llu", (unsigned long long)v);
        } else if (!strcmp(w[0], "kernel") && nw >= 4) {
            uint64_t v = 0;
            for (size_t i = 0; i < nkern; i++)
                if (strstr(kernels[i].name, w[1]))
                    v++;
            ok = cmp_op(v, w[2], strtoull(w[3], NULL, 0));
            snprintf(why, sizeof(why), "value %llu", (unsigned long long)v);
        } else if (!strcmp(w[0], "kernel_all") && nw >= 4) {
            uint64_t want = strtoull(w[3], NULL, 0), n = 0, bad = 0, seen = 0;
            int fi = 0;
            while (fi < 3 && strcmp(w[2], kern_fields[fi]))
                fi++;
            for (size_t i = 0; i < nkern && fi < 3; i++) {
                if (!strstr(kernels[i].name, w[1]))
                    continue;
                n++;
                if (kernels[i].attr[fi] != want) {
                    bad++;
                    seen = kernels[i].attr[fi];
                }
            }
            ok = fi < 3 && n > 0 && !bad;
            snprintf(why, sizeof(why), "%llu kernels, %llu other (e.g. %llu)", (unsigned long long)n,
                     (unsigned long long)bad, (unsigned long long)seen);
        } else if (!strcmp(w[0], "nvtx") && nw >= 2) {
            for (size_t i = 0; i < nnvtx && !ok; i++)
                ok = !strcmp(nvtx_msgs[i], w[1]);
        } else if (!strcmp(w[0], "complete") && nw >= 2) {
            ok = complete == atoi(w[1]);
        } else if (!strcmp(w[0], "end_signal") && nw >= 2) {
            ok = end_signal == atoi(w[1]);
            snprintf(why, sizeof(why), "signal %d", end_signal);
        } else if (!strcmp(w[0], "threads") && nw >= 3) {
            uint32_t tids[4096];
            size_t nt = 0;
            for (size_t i = 0; i < nev; i++) {
                if (evs[i].type != VT_EV_ALLOC)
                    continue;
                size_t k = 0;
                while (k < nt && tids[k] != evs[i].tid)
                    k++;
                if (k == nt && nt < 4096)
                    tids[nt++] = evs[i].tid;
            }
            ok = cmp_op(nt, w[1], strtoull(w[2], NULL, 0));
            snprintf(why, sizeof(why), "value %zu", nt);
        } else {
            snprintf(why, sizeof(why), "unknown expectation");
        }
        if (!ok) {
            failed++;
            if (failed <= 30)
                printf("FAIL %s  (%s)\n", p, why);
        }
    }
    fclose(f);
    printf("%s %d/%d expectations\n", failed ? "FAIL" : "PASS", total - failed, total);
    vt_reader_free(R);
    return failed ? 1 : 0;
}
