/* builtin-dump.c - `vramtrace dump FILE`: every record of a trace, one per
 * line, like `perf script` (or JSON lines with --json).  A faithful view of
 * the stream for debugging and scripting; reports live in `report`.
 * Uses the core reader only (src/core/vt_reader.h).
 *
 * Text line:  TIME TYPE key=value ...
 *   TIME  seconds relative to the first timed record (the first Sync), with
 *         ns precision; kernels use their start on the device clock.
 *   names resolved (kernel names, thread tids, strings); strings in double
 *   quotes with C escapes; addresses and handles in hex; sizes in bytes;
 *   an unknown id prints as ?#ID.
 * JSON line: {"time":REL_SECONDS,"time_ns":ABS,"type":"alloc",...}, the
 *   same keys; addresses as "0x..." strings; ids next to resolved names.
 * Exit: 0 complete trace, 1 read error (everything readable is printed
 * first, the error goes to stderr), 2 usage.
 */
#define _GNU_SOURCE /* __fsetlocking */
#include <errno.h>
#include <stdarg.h>
#include <stdio_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "vt_error.h"
#include "vt_escape.h"
#include "vt_reader.h"
#include "vt_outbuf.h"
#include "vt_tracedir.h"

#define MAX_STACK_PRINT 256

typedef struct {
    FILE *out;
    vt_reader *r;
    int json;
    int defs;
    int stacks;
    int base_set;
    uint64_t base;
    int nfields; /* JSON: fields written on the current line */
    vt_table_budget *budget; /* the definition tables of all files of the command */
    /* the output: events are written into ob and handed to `out` in large
     * pieces (stdio's per-call cost was nine tenths of a dump) */
    vt_outbuf ob;
    char obmem[1 << 17];
} dump_ctx;

#define OB_FLUSH_AT ((1u << 17) - (1u << 14)) /* flushed after an event when past this */

static const char *name_of(const char *const *names, unsigned n, unsigned v)
{
    return v < n && names[v] ? names[v] : "?";
}
static const char *const clock_names[] = {"unknown", "cupti", "monotonic", "realtime"};
static const char *const pool_names[] = {"create", "destroy", "trim", "set_threshold"};
static const char *const nvtx_names[] = {"push", "pop", "start", "end", "mark"};
static const char *const drop_names[] = {"writer_queue", "cupti_activity", "stack", "other"};
static const char *const sev_names[] = {"info", "warning", "error"};
static const char *const end_names[] = {"normal", "signal", "error"};
#define NAME(tab, v) name_of(tab, sizeof(tab) / sizeof(tab[0]), (unsigned)(v))

/* ---- value printers ------------------------------------------------- */

static void ob_put_cb(void *ctx, const char *p, size_t n)
{
    vt_ob_put(ctx, p, n);
}

/* a name in double quotes, escaped (vt_escape.h: no control byte, no
 * byte that is not UTF-8, reaches the terminal) */
static void put_text_str(dump_ctx *c, const char *s, size_t n)
{
    vt_ob_putc(&c->ob, '"');
    vt_esc_text(s, n, VT_ESC_QUOTE, ob_put_cb, &c->ob);
    vt_ob_putc(&c->ob, '"');
}

/* a name unquoted (frames, enum-like names), escaped the same way */
static void put_text_name(dump_ctx *c, const char *s)
{
    vt_esc_text(s, s ? strlen(s) : 0, 0, ob_put_cb, &c->ob);
}

/* a JSON string (the reader's strings are C strings: a NUL inside is C0 80) */
static void put_json_str(dump_ctx *c, const char *s, size_t n)
{
    (void)n;
    vt_esc_json(s, 0, ob_put_cb, &c->ob);
}

/* The hot fields without printf, unlocked (the output is this thread's
 * alone): vfprintf and fputs's locking were nine tenths of a dump. */
static inline __attribute__((always_inline)) void key(dump_ctx *c, const char *k)
{
    size_t n = strlen(k); /* the keys are this file's literals: short */
    if (__builtin_expect(c->ob.n + n + 4 > c->ob.cap, 0))
        vt_ob_flush(&c->ob);
    char *w = c->ob.buf + c->ob.n;
    if (c->json) {
        if (c->nfields++)
            *w++ = ',';
        *w++ = '"';
        memcpy(w, k, n);
        w += n;
        *w++ = '"';
        *w++ = ':';
    } else {
        *w++ = ' ';
        memcpy(w, k, n);
        w += n;
        *w++ = '=';
    }
    c->ob.n = (size_t)(w - c->ob.buf);
}

/* the decimal digits of v at the end of b[24]; their start */
static inline __attribute__((always_inline)) char *dec_digits(char *e, uint64_t v)
{
    do {
        *--e = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return e;
}

static inline __attribute__((always_inline)) void put_u64(dump_ctx *c, uint64_t v)
{
    char b[24], *e = b + sizeof(b), *q = dec_digits(e, v);
    vt_ob_put(&c->ob, q, (size_t)(e - q));
}

static inline __attribute__((always_inline)) void f_u64(dump_ctx *c, const char *k, uint64_t v)
{
    key(c, k);
    put_u64(c, v);
}
static void f_i64(dump_ctx *c, const char *k, int64_t v)
{
    key(c, k);
    if (v < 0)
        vt_ob_putc(&c->ob, '-');
    put_u64(c, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}
static inline __attribute__((always_inline)) void f_hex(dump_ctx *c, const char *k, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char b[24], *e = b + sizeof(b), *q = e;
    if (c->json)
        *--q = '"';
    do {
        *--q = hex[v & 15];
        v >>= 4;
    } while (v);
    *--q = 'x';
    *--q = '0';
    if (c->json)
        *--q = '"';
    key(c, k);
    vt_ob_put(&c->ob, q, (size_t)(e - q));
}
static inline __attribute__((always_inline)) void f_name(dump_ctx *c, const char *k, const char *v)
{
    key(c, k);
    if (c->json)
        put_json_str(c, v, strlen(v));
    else
        put_text_name(c, v);
}
static void f_strn(dump_ctx *c, const char *k, const char *s, size_t n)
{
    key(c, k);
    if (c->json)
        put_json_str(c, s, n);
    else
        put_text_str(c, s, n);
}
static void f_str(dump_ctx *c, const char *k, const char *s)
{
    f_strn(c, k, s ? s : "", s ? strlen(s) : 0);
}
/* A string id: JSON gets KEY_id and KEY (null when unknown); text gets
 * KEY="value", "" for id 0, ?#ID when unknown. */
static void f_sid(dump_ctx *c, const char *k, uint32_t id, const char *resolved)
{
    if (c->json) {
        char kid[64];
        snprintf(kid, sizeof(kid), "%s_id", k);
        f_u64(c, kid, id);
        if (resolved || !id) {
            f_str(c, k, resolved);
        } else {
            key(c, k);
            vt_ob_puts(&c->ob, "null");
        }
        return;
    }
    if (resolved || !id) {
        f_str(c, k, resolved);
    } else {
        key(c, k);
        vt_ob_printf(&c->ob, "?#%u", id);
    }
}
static void f_reltime(dump_ctx *c, const char *k, uint64_t t)
{
    int64_t d = (int64_t)(t - c->base);
    uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    key(c, k);
    char b[40], *e = b + sizeof(b), *q = e;
    uint64_t ns = a % 1000000000u;
    for (int i = 0; i < 9; i++, ns /= 10)
        *--q = (char)('0' + ns % 10);
    *--q = '.';
    q = dec_digits(q, a / 1000000000u);
    if (d < 0)
        *--q = '-';
    vt_ob_put(&c->ob, q, (size_t)(e - q));
}
static void f_dim3(dump_ctx *c, const char *k, const uint32_t v[3])
{
    key(c, k);
    if (c->json)
        vt_ob_putc(&c->ob, '[');
    for (int i = 0; i < 3; i++) {
        if (i)
            vt_ob_putc(&c->ob, c->json ? ',' : 'x');
        put_u64(c, v[i]);
    }
    if (c->json)
        vt_ob_putc(&c->ob, ']');
}
static void f_site(dump_ctx *c, const vt_site *s, int with_stack)
{
    f_u64(c, "thread", s->thread);
    f_u64(c, "tid", s->tid);
    if (with_stack)
        f_u64(c, "stack", s->stack);
}

/* ---- stacks ---------------------------------------------------------- */

static const char *basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void print_frame(dump_ctx *c, uint32_t fid, int first)
{
    const vt_ev_frame *f = vt_reader_frame(c->r, fid);
    if (c->json) {
        vt_ob_puts(&c->ob, first ? "{" : ",{");
        vt_ob_printf(&c->ob, "\"frame\":%u", fid);
        if (!f) {
            vt_ob_putc(&c->ob, '}');
            return;
        }
        if (f->kind == VT_FRAME_PYTHON) {
            vt_ob_puts(&c->ob, ",\"kind\":\"python\",\"function\":");
            const char *fn = vt_reader_string(c->r, f->function), *file = vt_reader_string(c->r, f->file);
            if (fn)
                put_json_str(c, fn, strlen(fn));
            else
                vt_ob_puts(&c->ob, "null");
            vt_ob_puts(&c->ob, ",\"file\":");
            if (file)
                put_json_str(c, file, strlen(file));
            else
                vt_ob_puts(&c->ob, "null");
            vt_ob_printf(&c->ob, ",\"line\":%u}", f->line);
        } else {
            const vt_ev_module *m = vt_reader_module(c->r, f->module);
            vt_ob_printf(&c->ob, ",\"kind\":\"native\",\"ip\":\"0x%llx\",\"module\":", (unsigned long long)f->ip);
            if (m) {
                put_json_str(c, m->path, strlen(m->path));
                vt_ob_printf(&c->ob, ",\"offset\":\"0x%llx\"}", (unsigned long long)(f->ip - m->load_bias));
            } else {
                vt_ob_puts(&c->ob, "null}");
            }
        }
        return;
    }
    if (!f) {
        vt_ob_printf(&c->ob, "\t?#%u\n", fid);
        return;
    }
    if (f->kind == VT_FRAME_PYTHON) {
        const char *fn = vt_reader_string(c->r, f->function), *file = vt_reader_string(c->r, f->file);
        vt_ob_putc(&c->ob, '\t');
        put_text_name(c, fn ? fn : "?");
        vt_ob_puts(&c->ob, " (");
        put_text_name(c, file ? file : "?");
        vt_ob_printf(&c->ob, ":%u) [python]\n", f->line);
    } else {
        const vt_ev_module *m = vt_reader_module(c->r, f->module);
        if (m) {
            vt_ob_printf(&c->ob, "\t%16llx [", (unsigned long long)f->ip);
            put_text_name(c, basename_of(m->path));
            vt_ob_printf(&c->ob, "+0x%llx]\n", (unsigned long long)(f->ip - m->load_bias));
        } else {
            vt_ob_printf(&c->ob, "\t%16llx [?]\n", (unsigned long long)f->ip);
        }
    }
}

static void print_stack(dump_ctx *c, uint32_t stack)
{
    uint32_t frames[MAX_STACK_PRINT];
    uint32_t depth = stack ? vt_reader_stack(c->r, stack, frames, MAX_STACK_PRINT) : 0;
    uint32_t n = depth < MAX_STACK_PRINT ? depth : MAX_STACK_PRINT;
    if (c->json) {
        key(c, "frames");
        vt_ob_putc(&c->ob, '[');
        for (uint32_t i = 0; i < n; i++)
            print_frame(c, frames[i], i == 0);
        vt_ob_putc(&c->ob, ']');
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        print_frame(c, frames[i], i == 0);
    if (depth > n)
        vt_ob_printf(&c->ob, "\t... %u more frames\n", depth - n);
}

/* ---- events ------------------------------------------------------------ */

static int is_def(vt_evtype t)
{
    return t == VT_EV_STRING || t == VT_EV_FRAME || t == VT_EV_STACK || t == VT_EV_MODULE || t == VT_EV_THREAD ||
           t == VT_EV_LAUNCH;
}

/* the call site with its stack (vt_event_kinds.h, SITE 2) */
static const vt_site *site_of(const vt_event *ev)
{
    return vt_event_stack_site(ev);
}

static void print_event(dump_ctx *c, const vt_event *ev)
{
    if (!c->defs && is_def(ev->type))
        return;
    if (!c->base_set && ev->type != VT_EV_HEADER) {
        c->base = ev->time_ns;
        c->base_set = 1;
    }
    uint64_t t = ev->type == VT_EV_HEADER ? c->base : ev->time_ns;
    if (c->json) {
        int64_t d = (int64_t)(t - c->base);
        uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
        vt_ob_printf(&c->ob, "{\"time\":%s%llu.%09llu,\"time_ns\":%llu,\"type\":\"%s\"", d < 0 ? "-" : "",
                (unsigned long long)(a / 1000000000u), (unsigned long long)(a % 1000000000u),
                (unsigned long long)(ev->type == VT_EV_HEADER ? 0 : ev->time_ns), vt_evtype_name(ev->type));
        c->nfields = 3;
    } else {
        int64_t d = (int64_t)(t - c->base);
        uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
        /* "%16s %-16s" of "[-]S.NNNNNNNNN" and the type's name, by hand:
         * the time right-aligned in 16 columns, wider when it needs more
         * (up to 31: 20 digits of seconds, a sign, a point and 9 digits) */
        char line[64], *e = line + 32, *q = e;
        uint64_t ns = a % 1000000000u;
        for (int k = 0; k < 9; k++, ns /= 10)
            *--q = (char)('0' + ns % 10);
        *--q = '.';
        q = dec_digits(q, a / 1000000000u);
        if (d < 0)
            *--q = '-';
        while (e - q < 16)
            *--q = ' ';
        *e = ' ';
        const char *tn = vt_evtype_name(ev->type);
        size_t tl = strlen(tn);
        if (tl > 16)
            tl = 16;
        memcpy(e + 1, tn, tl);
        memset(e + 1 + tl, ' ', 16 - tl);
        vt_ob_put(&c->ob, q, (size_t)(e + 17 - q));
    }

    switch (ev->type) {
    case VT_EV_HEADER: {
        const vt_ev_header *h = &ev->u.header;
        f_hex(c, "magic", h->magic);
        f_u64(c, "version", h->format_version);
        f_str(c, "tool", h->tool_version);
        f_u64(c, "pid", h->pid);
        f_u64(c, "ppid", h->ppid);
        f_str(c, "host", h->hostname);
        f_str(c, "program", h->program);
        if (c->json) {
            key(c, "argv");
            vt_ob_putc(&c->ob, '[');
            for (uint32_t i = 0; i < h->argc; i++) {
                if (i)
                    vt_ob_putc(&c->ob, ',');
                put_json_str(c, h->argv[i], strlen(h->argv[i]));
            }
            vt_ob_puts(&c->ob, "],\"env\":{");
            for (uint32_t i = 0; i < h->nenv; i++) {
                if (i)
                    vt_ob_putc(&c->ob, ',');
                put_json_str(c, h->env_names[i], strlen(h->env_names[i]));
                vt_ob_putc(&c->ob, ':');
                put_json_str(c, h->env_values[i], strlen(h->env_values[i]));
            }
            vt_ob_putc(&c->ob, '}');
        } else {
            for (uint32_t i = 0; i < h->argc; i++) {
                char k[32];
                snprintf(k, sizeof(k), "argv[%u]", i);
                f_str(c, k, h->argv[i]);
            }
            for (uint32_t i = 0; i < h->nenv; i++) {
                vt_ob_puts(&c->ob, " env.");
                put_text_name(c, h->env_names[i]);
                vt_ob_putc(&c->ob, '=');
                put_text_str(c, h->env_values[i], strlen(h->env_values[i]));
            }
        }
        f_name(c, "clock", NAME(clock_names, h->clock));
        f_u64(c, "trace_clock_ns", h->trace_clock_ns);
        f_u64(c, "realtime_ns", h->realtime_ns);
        f_u64(c, "kernels", (uint64_t)h->kernels);
        f_u64(c, "native_stacks", (uint64_t)h->native_stacks);
        f_u64(c, "python_stacks", (uint64_t)h->python_stacks);
        break;
    }
    case VT_EV_SYNC:
        f_u64(c, "seq", ev->u.sync.sequence);
        f_u64(c, "host_ns", ev->u.sync.time_ns);
        f_u64(c, "device_ns", ev->u.sync.device_time_ns);
        break;
    case VT_EV_STRING:
        f_u64(c, "id", ev->u.string.id);
        f_strn(c, "value", ev->u.string.value, ev->u.string.len);
        break;
    case VT_EV_FRAME: {
        const vt_ev_frame *f = &ev->u.frame;
        f_u64(c, "id", f->id);
        if (f->kind == VT_FRAME_PYTHON) {
            f_name(c, "kind", "python");
            f_sid(c, "function", f->function, vt_reader_string(c->r, f->function));
            f_sid(c, "file", f->file, vt_reader_string(c->r, f->file));
            f_u64(c, "line", f->line);
        } else {
            f_name(c, "kind", f->kind == VT_FRAME_NATIVE ? "native" : "?");
            f_hex(c, "ip", f->ip);
            f_u64(c, "module", f->module);
        }
        break;
    }
    case VT_EV_STACK: {
        const vt_ev_stack *s = &ev->u.stack;
        f_u64(c, "id", s->id);
        f_u64(c, "parent", s->parent);
        key(c, "frames");
        vt_ob_puts(&c->ob, c->json ? "[" : "");
        for (uint32_t i = 0; i < s->nframes; i++)
            vt_ob_printf(&c->ob, i ? ",%u" : "%u", s->frames[i]);
        vt_ob_puts(&c->ob, c->json ? "]" : "");
        f_u64(c, "depth", vt_reader_stack(c->r, s->id, NULL, 0));
        break;
    }
    case VT_EV_MODULE: {
        const vt_ev_module *m = &ev->u.module;
        f_u64(c, "id", m->id);
        f_str(c, "path", m->path);
        f_hex(c, "load_bias", m->load_bias);
        f_hex(c, "start", m->start);
        f_hex(c, "end", m->end);
        key(c, "build_id");
        vt_ob_puts(&c->ob, c->json ? "\"" : "");
        for (uint32_t i = 0; i < m->build_id_len; i++)
            vt_ob_printf(&c->ob, "%02x", m->build_id[i]);
        vt_ob_puts(&c->ob, c->json ? "\"" : "");
        break;
    }
    case VT_EV_THREAD:
        f_u64(c, "id", ev->u.thread.id);
        f_u64(c, "tid", ev->u.thread.tid);
        f_str(c, "name", ev->u.thread.name);
        break;
    case VT_EV_DEVICE: {
        const vt_ev_device *d = &ev->u.device;
        const uint8_t *u = d->uuid;
        char uuid[48];
        snprintf(uuid, sizeof(uuid),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        f_u64(c, "index", d->index);
        f_str(c, "name", d->name);
        f_name(c, "uuid", uuid);
        f_u64(c, "total_memory", d->total_memory);
        key(c, "cc");
        vt_ob_printf(&c->ob, c->json ? "\"%u.%u\"" : "%u.%u", d->cc_major, d->cc_minor);
        f_str(c, "pci_bus_id", d->pci_bus_id);
        break;
    }
    case VT_EV_LAUNCH: {
        const vt_ev_launch *l = &ev->u.launch;
        f_u64(c, "id", l->id);
        f_sid(c, "name", l->name, vt_reader_string(c->r, l->name));
        f_u64(c, "device", l->device);
        f_u64(c, "stream", l->stream);
        f_dim3(c, "grid", l->grid);
        f_dim3(c, "block", l->block);
        f_u64(c, "smem", l->shared_memory);
        f_u64(c, "graph", (uint64_t)l->graph);
        break;
    }
    case VT_EV_KERNEL: {
        const vt_ev_kernel *k = &ev->u.kernel;
        if (k->name_id || k->name) {
            f_sid(c, "name", k->name_id, k->name);
        } else { /* launch unknown (lost in a damaged frame) */
            if (c->json)
                f_u64(c, "name_id", 0);
            key(c, "name");
            vt_ob_puts(&c->ob, c->json ? "null" : "?");
        }
        f_u64(c, "launch", k->launch_id);
        f_u64(c, "device", k->device);
        f_u64(c, "stream", k->stream);
        f_dim3(c, "grid", k->grid);
        f_dim3(c, "block", k->block);
        f_u64(c, "smem", k->shared_memory);
        f_u64(c, "duration_ns", k->duration_ns);
        f_reltime(c, "end", ev->time_ns + k->duration_ns);
        f_u64(c, "graph", (uint64_t)k->graph);
        f_u64(c, "graph_id", k->graph_id);
        f_u64(c, "corr", k->corr);
        break;
    }
    case VT_EV_ALLOC: {
        const vt_ev_alloc *a = &ev->u.alloc;
        f_hex(c, "addr", a->address);
        f_u64(c, "size", a->size);
        f_u64(c, "device", a->device);
        f_name(c, "kind", vt_memkind_name(a->kind));
        f_name(c, "api", vt_allocapi_name(a->api));
        f_hex(c, "stream", a->stream);
        f_hex(c, "pool", a->pool);
        f_site(c, &a->site, 1);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_FREE: {
        const vt_ev_free *a = &ev->u.free;
        f_hex(c, "addr", a->address);
        f_u64(c, "device", a->device);
        f_name(c, "kind", vt_memkind_name(a->kind));
        f_name(c, "api", vt_allocapi_name(a->api));
        f_hex(c, "stream", a->stream);
        f_site(c, &a->site, 1);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_ALLOC_FAILED: {
        const vt_ev_alloc_failed *a = &ev->u.alloc_failed;
        f_u64(c, "size", a->size);
        f_u64(c, "device", a->device);
        f_name(c, "kind", vt_memkind_name(a->kind));
        f_name(c, "api", vt_allocapi_name(a->api));
        f_i64(c, "error", a->error);
        f_sid(c, "error_name", a->error_name_id, a->error_name);
        f_hex(c, "stream", a->stream);
        f_hex(c, "pool", a->pool);
        f_site(c, &a->site, 1);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_ADDRESS_FREE:
    case VT_EV_VMM_UNMAP: {
        const vt_ev_vmm_range *a = &ev->u.vmm_range;
        f_hex(c, "addr", a->address);
        f_u64(c, "size", a->size);
        f_site(c, &a->site, ev->type == VT_EV_VMM_RESERVE);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_VMM_CREATE: {
        const vt_ev_vmm_create *a = &ev->u.vmm_create;
        f_hex(c, "handle", a->handle);
        f_u64(c, "size", a->size);
        f_u64(c, "device", a->device);
        f_name(c, "kind", vt_memkind_name(a->kind));
        f_site(c, &a->site, 1);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_VMM_RELEASE:
        f_hex(c, "handle", ev->u.vmm_release.handle);
        f_site(c, &ev->u.vmm_release.site, 0);
        f_u64(c, "corr", ev->u.vmm_release.corr);
        break;
    case VT_EV_VMM_MAP: {
        const vt_ev_vmm_map *a = &ev->u.vmm_map;
        f_hex(c, "addr", a->address);
        f_u64(c, "size", a->size);
        f_u64(c, "offset", a->offset);
        f_hex(c, "handle", a->handle);
        f_site(c, &a->site, 0);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_POOL: {
        const vt_ev_pool *a = &ev->u.pool;
        f_name(c, "op", NAME(pool_names, a->op));
        f_hex(c, "pool", a->pool);
        f_u64(c, "device", a->device);
        f_u64(c, "value", a->value);
        f_site(c, &a->site, 1);
        f_u64(c, "corr", a->corr);
        break;
    }
    case VT_EV_POOL_USAGE: {
        const vt_ev_pool_usage *a = &ev->u.pool_usage;
        f_hex(c, "pool", a->pool);
        f_u64(c, "device", a->device);
        f_u64(c, "reserved_current", a->reserved_current);
        f_u64(c, "reserved_high", a->reserved_high);
        f_u64(c, "used_current", a->used_current);
        f_u64(c, "used_high", a->used_high);
        break;
    }
    case VT_EV_MEMORY_USAGE:
        f_u64(c, "device", ev->u.memory_usage.device);
        f_u64(c, "free", ev->u.memory_usage.free);
        f_u64(c, "total", ev->u.memory_usage.total);
        break;
    case VT_EV_NVTX: {
        const vt_ev_nvtx *a = &ev->u.nvtx;
        f_name(c, "op", NAME(nvtx_names, a->op));
        f_sid(c, "message", a->message_id, a->message);
        f_sid(c, "domain", a->domain_id, a->domain);
        f_u64(c, "range_id", a->range_id);
        f_site(c, &a->site, 0);
        break;
    }
    case VT_EV_DROPPED:
        f_name(c, "source", NAME(drop_names, ev->u.dropped.source));
        f_u64(c, "count", ev->u.dropped.count);
        f_sid(c, "reason", ev->u.dropped.reason_id, ev->u.dropped.reason);
        break;
    case VT_EV_NOTE:
        f_name(c, "severity", NAME(sev_names, ev->u.note.severity));
        f_str(c, "text", ev->u.note.text);
        break;
    case VT_EV_END:
        f_name(c, "reason", NAME(end_names, ev->u.end.reason));
        f_i64(c, "signal", ev->u.end.signal);
        f_u64(c, "events", ev->u.end.events);
        f_u64(c, "dropped", ev->u.end.dropped);
        break;
    default:
        break;
    }
    const vt_site *site = site_of(ev);
    if (c->stacks && site && site->stack && c->json)
        print_stack(c, site->stack);
    vt_ob_puts(&c->ob, c->json ? "}\n" : "\n");
    if (c->stacks && site && site->stack && !c->json)
        print_stack(c, site->stack);
    if (c->ob.n >= OB_FLUSH_AT)
        vt_ob_flush(&c->ob);
}

/* ---- command ----------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vramtrace dump [--json] [--no-defs] [--stacks] [--stats] FILE|DIR\n"
            "\n"
            "Print every record of a trace, one per line (like perf script):\n"
            "  TIME TYPE key=value ...\n"
            "TIME is in seconds relative to the first timed record, with ns precision\n"
            "(kernels: start time on the device clock).  Ids are resolved: kernel\n"
            "names, thread tids, strings; an unknown id prints as ?#ID.\n"
            "Definitions (string, frame, stack, module, thread, launch) are printed\n"
            "too, where they occur in the stream, unless --no-defs.  A directory: each\n"
            "of its *.zst traces, by name, after a line naming it (JSON: {\"type\":\"file\"}).\n"
            "\n"
            "  --json      one JSON object per line, same keys (addresses as \"0x...\")\n"
            "  --no-defs   leave out the definition records\n"
            "  --stacks    print the call stack under each event that has one\n"
            "  --stats     reader statistics on stderr at the end\n"
            "  --max-memory BYTES  the definition tables of each file at most (K, M, G; default 1G)\n"
            "  -h, --help  this help\n"
            "\n"
            "A damaged or truncated trace is printed as far as it can be read; the\n"
            "errors go to stderr.  Exit status: 0 complete trace, 1 read error or\n"
            "incomplete trace, 2 usage error.\n");
}

/* One trace: its events, then the reader's errors (file, offset). */
static int dump_one(dump_ctx *c, const char *path, int stats)
{
    int status = 0;
    char msg[512];
    int rc = vt_reader_open(&c->r, path, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "vramtrace dump: %s\n", msg);
        return 1;
    }
    vt_reader_share_budget(c->r, c->budget);
    __fsetlocking(c->out, FSETLOCKING_BYCALLER); /* one thread writes */
    vt_ob_init(&c->ob, c->out, c->obmem, sizeof(c->obmem));
    vt_event ev;
    for (;;) {
        rc = vt_reader_next(c->r, &ev);
        if (rc == 1) {
            print_event(c, &ev);
            continue;
        }
        if (rc == 0)
            break;
        char eb[1200];
        vt_ob_flush(&c->ob);
        fflush(c->out);
        fprintf(stderr, "vramtrace dump: %s\n", vt_esc_text_buf(vt_reader_errmsg(c->r), eb, sizeof(eb)));
        status = 1;
        if (rc != VT_ERR_CORRUPT && rc != VT_ERR_TOO_LARGE)
            break; /* final */
    }
    vt_ob_flush(&c->ob);
    fflush(c->out);
    if (stats) {
        vt_reader_stats st;
        vt_reader_get_stats(c->r, &st);
        fprintf(stderr,
                "records=%llu frames=%llu bytes_in=%llu bytes_raw=%llu skipped_bytes=%llu resyncs=%llu "
                "sync_gaps=%llu unknown_fields=%llu unknown_records=%llu table_bytes=%llu complete=%d\n",
                (unsigned long long)st.records, (unsigned long long)st.frames, (unsigned long long)st.bytes_in,
                (unsigned long long)st.bytes_raw, (unsigned long long)st.skipped_bytes,
                (unsigned long long)st.resyncs, (unsigned long long)st.sync_gaps,
                (unsigned long long)st.unknown_fields, (unsigned long long)st.unknown_records,
                (unsigned long long)st.table_bytes, st.complete);
    }
    if (ferror(c->out)) {
        fprintf(stderr, "vramtrace dump: write error on standard output\n");
        status = 1;
    }
    vt_reader_free(c->r);
    c->r = NULL;
    return status;
}

/* Every regular *.zst of a directory, sorted by name, each after a line naming it. */
static int dump_dir(dump_ctx *c, const char *dir, int stats)
{
    char **names;
    size_t n;
    if (vt_tracedir_list(dir, "vramtrace dump", &names, &n)) {
        fprintf(stderr, "vramtrace dump: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int status = n ? 0 : 1;
    if (!n)
        fprintf(stderr, "vramtrace dump: %s: no *.zst trace in it\n", dir);
    for (size_t i = 0; i < n; i++) {
        dump_ctx one = *c; /* each trace its own time base */
        one.base = 0;
        one.base_set = 0;
        /* and its own table budget: dump keeps nothing of a trace once it is
         * printed, so what one file's tables took is given back after it (a
         * budget shared by all refused the rest of a directory of ~49k
         * traces while 11 MB were in use) */
        vt_table_budget own = {.limit = c->budget->limit, .used = 0};
        one.budget = &own;
        vt_ob_init(&one.ob, c->out, one.obmem, sizeof(one.obmem));
        if (c->json) {
            vt_ob_puts(&one.ob, "{\"type\":\"file\",\"path\":");
            put_json_str(&one, names[i], strlen(names[i]));
            vt_ob_puts(&one.ob, "}\n");
        } else {
            vt_ob_puts(&one.ob, "== ");
            put_text_name(&one, names[i]);
            vt_ob_puts(&one.ob, " ==\n");
        }
        vt_ob_flush(&one.ob);
        status |= dump_one(&one, names[i], stats);
        free(names[i]);
    }
    free(names);
    return status;
}

int cmd_dump(int argc, char **argv)
{
    static dump_ctx c; /* 128 KiB of output buffer: not on the stack */
    memset(&c, 0, sizeof(c));
    vt_table_budget budget = {.limit = VT_READER_COMMAND_TABLE_BYTES, .used = 0};
    c.budget = &budget;
    c.out = stdout;
    const char *path = NULL;
    int stats = 0, status = 0;
    c.defs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            c.json = 1;
        } else if (!strcmp(a, "--no-defs")) {
            c.defs = 0;
        } else if (!strcmp(a, "--stacks")) {
            c.stacks = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--max-memory") && i + 1 < argc) { /* each file's tables at most */
            char *end;
            uint64_t b = strtoull(argv[++i], &end, 10);
            b <<= *end == 'G' ? 30 : *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
            if (end == argv[i] || (*end && end[1]) || (*end && !strchr("KMG", *end)) || b < (1u << 20)) {
                fprintf(stderr, "vramtrace dump: --max-memory needs a byte count of at least 1M (e.g. 4G)\n");
                return 2;
            }
            budget.limit = b;
        } else if (!strcmp(a, "--") && i + 1 < argc && !path) {
            path = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "vramtrace dump: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "vramtrace dump: one trace file at a time ('%s' and '%s')\n", path, a);
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "vramtrace dump: missing trace file\n");
        usage(stderr);
        return 2;
    }
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        status = dump_dir(&c, path, stats);
    else
        status = dump_one(&c, path, stats);
    return status;
}

/* One trace into out, as `dump [--json] [--stacks]` prints it (the fuzz
 * target of the renderers, tests/fuzz/fuzz_render.c); 0 or 1 as dump. */
int vt_dump_file(FILE *out, const char *path, int json, int stacks)
{
    static dump_ctx c;
    memset(&c, 0, sizeof(c));
    vt_table_budget budget = {.limit = VT_READER_COMMAND_TABLE_BYTES, .used = 0};
    c.budget = &budget;
    c.out = out;
    c.defs = 1;
    c.json = json;
    c.stacks = stacks;
    return dump_one(&c, path, 0);
}
