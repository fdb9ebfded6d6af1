/* gen_hostile OUTDIR - hostile traces for the hardening tests (issue 36),
 * written with the test encoder (tests/core/vt_testenc.h: protobuf-c and
 * zstd, not the project's writer), checked by hostile.sh:
 *   names.zst    every name a trace carries (argv, host, program, thread,
 *                note, NVTX, function, file, module) with ESC sequences, a
 *                newline that forges a report line, `<!--<script>`, an
 *                onerror attribute, invalid UTF-8 and a NUL;
 *   far.zst      events 2x10^6 s after and 2x10^5 s before the first
 *                timed record (dump's time column);
 *   backwards.zst time running backwards: every event before the first
 *                Sync's time, a free before its allocation;
 *   overlap.zst  two live blocks whose ranges overlap in part;
 *   baddev.zst   a Device record with an impossible index among good ones;
 *   cut-noalloc.zst a trace cut short before any allocation;
 *   cut-alloc.zst   a trace cut short inside its last frame (unverified);
 *   version.zst  a header of format version 99;
 *   sites.zst    3000 call sites; bigname.zst one 8 KiB name (budgets). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_event.h"
#include "vt_testenc.h"

#define SEC 1000000000ull
#define T0 (1000ull * SEC)

static int save(const char *dir, const char *name, vt_tenc *e, size_t cut)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    size_t n;
    if (!cut)
        vt_tenc_end_frame(e);
    const uint8_t *d = vt_tenc_data(e, &n);
    if (cut && cut < n)
        n = cut;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        perror(path);
        return 1;
    }
    vt_tenc_free(e);
    return 0;
}

static void header(vt_tenc *e, uint32_t version, char **argv, int argc, const char *host, const char *program)
{
    static char *dflt[] = {"python3", "train.py"};
    Vramtrace__Header h = VRAMTRACE__HEADER__INIT;
    h.magic = VT_FORMAT_MAGIC;
    h.format_version = version;
    h.tool_version = "hostile";
    h.pid = 777;
    h.ppid = 1;
    h.hostname = (char *)(host ? host : "testhost");
    h.n_argv = argv ? (size_t)argc : 2;
    h.argv = argv ? argv : dflt;
    h.program = (char *)(program ? program : "train.py");
    h.clock = VRAMTRACE__CLOCK_DOMAIN__CLOCK_MONOTONIC;
    h.trace_clock_ns = T0;
    h.realtime_ns = 1796000000000000000ull;
    h.kernels = 1;
    h.native_stacks = 1;
    h.python_stacks = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_HEADER, &h);
}

static vt_tenc *start(int checksum)
{
    vt_tenc *e = vt_tenc_new(checksum);
    header(e, VT_FORMAT_VERSION, NULL, 0, NULL, NULL);
    vt_tenc_sync(e, 0, T0, T0);
    return e;
}

static void put_varint(uint8_t **p, uint64_t v)
{
    while (v >= 0x80) {
        *(*p)++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *(*p)++ = (uint8_t)v;
}

/* a String record of n bytes as they are (a NUL inside), by hand */
static void raw_string(vt_tenc *e, uint32_t id, const char *s, size_t n)
{
    uint8_t str[512], rec[600], ent[700], *p = str;
    *p++ = 0x08;
    put_varint(&p, id);
    *p++ = 0x12;
    put_varint(&p, n);
    memcpy(p, s, n);
    p += n;
    uint8_t *q = rec;
    *q++ = 0x22; /* Record.string, field 4 */
    put_varint(&q, (uint64_t)(p - str));
    memcpy(q, str, (size_t)(p - str));
    q += p - str;
    uint8_t *w = ent;
    *w++ = 0x0a;
    put_varint(&w, (uint64_t)(q - rec));
    memcpy(w, rec, (size_t)(q - rec));
    w += q - rec;
    vt_tenc_stream_bytes(e, ent, (size_t)(w - ent));
}

static void device(vt_tenc *e, uint32_t index)
{
    Vramtrace__Device d = VRAMTRACE__DEVICE__INIT;
    d.index = index;
    d.name = "NVIDIA H200";
    d.total_memory = 150754820096ull;
    d.cc_major = 9;
    d.pci_bus_id = "00000000:19:00.0";
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_DEVICE, &d);
}

static void alloc(vt_tenc *e, int64_t dt, uint64_t addr, uint64_t size, uint32_t stack)
{
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = addr;
    a.size = size;
    a.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    a.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC;
    a.thread = 1;
    a.stack = stack;
    vt_tenc_add(e, dt, VRAMTRACE__RECORD__BODY_ALLOC, &a);
}

static void free_(vt_tenc *e, int64_t dt, uint64_t addr)
{
    Vramtrace__Free f = VRAMTRACE__FREE__INIT;
    f.address = addr;
    f.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    f.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC;
    f.thread = 1;
    vt_tenc_add(e, dt, VRAMTRACE__RECORD__BODY_FREE, &f);
}

static void thread(vt_tenc *e, uint32_t id, const char *name)
{
    Vramtrace__Thread t = VRAMTRACE__THREAD__INIT;
    t.id = id;
    t.tid = 777;
    t.name = (char *)name;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_THREAD, &t);
}

static void kernel(vt_tenc *e, int64_t dt)
{
    Vramtrace__Launch l = VRAMTRACE__LAUNCH__INIT;
    l.id = 1;
    l.name = 9;
    l.stream = 7;
    l.grid_x = l.grid_y = l.grid_z = l.block_x = l.block_y = l.block_z = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_LAUNCH, &l);
    Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
    k.launch = 1;
    k.duration_ns = 1000;
    vt_tenc_add(e, dt, VRAMTRACE__RECORD__BODY_KERNEL, &k);
}

static void py_frame(vt_tenc *e, uint32_t id, uint32_t fn, uint32_t file, uint32_t line)
{
    Vramtrace__Frame f = VRAMTRACE__FRAME__INIT;
    f.id = id;
    f.kind = VRAMTRACE__FRAME_KIND__FRAME_PYTHON;
    f.function = fn;
    f.file = file;
    f.line = line;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &f);
}

static void stack1(vt_tenc *e, uint32_t id, uint32_t frame)
{
    uint32_t fr[] = {frame};
    Vramtrace__Stack s = VRAMTRACE__STACK__INIT;
    s.id = id;
    s.n_frame = 1;
    s.frame = fr;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STACK, &s);
}

static int names(const char *dir)
{
    static char *argv[] = {"python3", "evil\x1b]0;pwned-title\x07.py", "--clip=\x1b]52;c;cHduZWQ=\x07",
                           "--x=\nverdict: no leak (forged)", "--csi=\xc2\x9b" "2J"};
    vt_tenc *e = vt_tenc_new(1);
    header(e, VT_FORMAT_VERSION, argv, 5, "host\x1b[2J\x1b[H", "prog\x1b[31m<img src=x onerror=alert(1)>");
    vt_tenc_sync(e, 0, T0, T0);
    device(e, 0);
    thread(e, 1, "thr\x1b]0;t\x07<script>alert(2)</script>");
    raw_string(e, 1, "fn\0after-nul", 12);
    vt_tenc_string(e, 2, "/w/<!--<script>alert(3)</script>.py");
    vt_tenc_string(e, 3, "bad\xff\xfe utf8 \xc3(");
    vt_tenc_string(e, 4, "/w/x\x1b[2Jy.py");
    vt_tenc_string(e, 5, "step\x1b]0;nvtx\x07");
    vt_tenc_string(e, 6, "<img src=x onerror=alert(4)>");
    vt_tenc_string(e, 9, "kern\x1b[5m<!--");
    py_frame(e, 1, 1, 2, 10);
    py_frame(e, 2, 3, 4, 20);
    py_frame(e, 3, 6, 3, 30);
    stack1(e, 1, 1);
    stack1(e, 2, 2);
    stack1(e, 3, 3);
    Vramtrace__Note no = VRAMTRACE__NOTE__INIT;
    no.severity = VRAMTRACE__SEVERITY__SEVERITY_WARNING;
    no.text = "note\x1b[2J\nread error: forged";
    vt_tenc_add(e, 1, VRAMTRACE__RECORD__BODY_NOTE, &no);
    Vramtrace__Nvtx n = VRAMTRACE__NVTX__INIT;
    n.op = VRAMTRACE__NVTX_OP__NVTX_MARK;
    n.message = 5;
    n.thread = 1;
    vt_tenc_add(e, 10, VRAMTRACE__RECORD__BODY_NVTX, &n);
    alloc(e, 1000, 0x7f0000000000ull, 1 << 20, 1);
    alloc(e, 1000, 0x7f0000200000ull, 2 << 20, 2);
    alloc(e, 1000, 0x7f0000600000ull, 3 << 20, 3);
    kernel(e, 5000);
    vt_tenc_end(e, 6);
    return save(dir, "names.zst", e, 0);
}

static int far(const char *dir)
{
    vt_tenc *e = start(1);
    device(e, 0);
    alloc(e, 1000, 0x1000000, 4096, 0);
    alloc(e, (int64_t)(2000000ull * SEC), 0x2000000, 4096, 0);
    alloc(e, -(int64_t)(2200000ull * SEC), 0x3000000, 4096, 0);
    vt_tenc_end(e, 3);
    return save(dir, "far.zst", e, 0);
}

static int backwards(const char *dir)
{
    vt_tenc *e = start(1);
    device(e, 0);
    alloc(e, 5 * (int64_t)SEC, 0x1000000, 4096, 0);
    free_(e, -10 * (int64_t)SEC, 0x1000000); /* before its allocation, before the start */
    alloc(e, 1000, 0x2000000, 8192, 0);
    Vramtrace__MemoryUsage mu = VRAMTRACE__MEMORY_USAGE__INIT;
    mu.free = 140ull << 30; /* nothing used, by the driver's word: less than traced */
    mu.total = 140ull << 30;
    vt_tenc_add(e, 10, VRAMTRACE__RECORD__BODY_MEMORY_USAGE, &mu);
    vt_tenc_end(e, -20 * (int64_t)SEC); /* the end before the start */
    return save(dir, "backwards.zst", e, 0);
}

static int overlap(const char *dir)
{
    vt_tenc *e = start(1);
    device(e, 0);
    alloc(e, 1000, 0x1000000, 0x10000, 0);
    alloc(e, 1000, 0x1008000, 0x10000, 0); /* inside the first, not at its address */
    alloc(e, 1000, 0x2000000, 0x1000, 0);  /* apart */
    vt_tenc_end(e, 3);
    return save(dir, "overlap.zst", e, 0);
}

static int baddev(const char *dir)
{
    vt_tenc *e = start(1);
    device(e, 0);
    alloc(e, 1000, 0x1000000, 4096, 0);
    device(e, 4000000000u); /* no such device */
    for (int i = 0; i < 5; i++)
        alloc(e, 1000, 0x2000000 + (uint64_t)i * 0x10000, 4096, 0);
    vt_tenc_end(e, 7);
    return save(dir, "baddev.zst", e, 0);
}

static int cut(const char *dir)
{
    /* no allocation before the cut: the report must not call that "no leak" */
    vt_tenc *e = start(1);
    device(e, 0);
    vt_tenc_flush(e);
    size_t at = vt_tenc_size(e);
    alloc(e, 1000, 0x1000000, 4096, 0);
    vt_tenc_flush(e);
    if (save(dir, "cut-noalloc.zst", e, at))
        return 1;
    /* the last frame cut short: its events are decoded without a checksum */
    e = start(1);
    device(e, 0);
    alloc(e, 1000, 0x1000000, 4096, 0);
    vt_tenc_end_frame(e);
    vt_tenc_sync(e, 1, T0 + SEC, T0 + SEC);
    for (int i = 0; i < 3; i++)
        alloc(e, 1000, 0x2000000 + (uint64_t)i * 0x10000, 4096, 0);
    vt_tenc_flush(e);
    return save(dir, "cut-alloc.zst", e, vt_tenc_size(e));
}

/* 3000 call sites (a stack each): past a small analysis budget */
static int sites(const char *dir)
{
    vt_tenc *e = start(1);
    device(e, 0);
    vt_tenc_string(e, 1, "site");
    vt_tenc_string(e, 2, "sites.py");
    for (uint32_t i = 1; i <= 3000; i++) {
        py_frame(e, i, 1, 2, i);
        stack1(e, i, i);
        alloc(e, 1000, 0x10000000ull + (uint64_t)i * 0x1000, 4096, i);
    }
    vt_tenc_end(e, 3000);
    return save(dir, "sites.zst", e, 0);
}

/* one 8 KiB name: its tables take ~8 KiB, a directory of copies more
 * together than a small budget (dump gives each file's back) */
static int bigname(const char *dir)
{
    static char name[8193];
    memset(name, 'n', 8192);
    vt_tenc *e = start(1);
    vt_tenc_string(e, 1, name);
    vt_tenc_end(e, 0);
    return save(dir, "bigname.zst", e, 0);
}

static int version(const char *dir)
{
    vt_tenc *e = vt_tenc_new(1);
    header(e, 99, NULL, 0, NULL, NULL);
    vt_tenc_sync(e, 0, T0, T0);
    vt_tenc_end(e, 0);
    return save(dir, "version.zst", e, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_hostile OUTDIR\n");
        return 2;
    }
    const char *d = argv[1];
    return names(d) || far(d) || backwards(d) || overlap(d) || baddev(d) || cut(d) || version(d) || sites(d) ||
           bigname(d);
}
