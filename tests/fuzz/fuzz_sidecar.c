/* fuzz_sidecar.c - libFuzzer target for the files read beside a trace:
 * any bytes as TRACE.sym (vt_symbols_load, then a lookup that consults
 * what it loaded), as holders.PID.txt (joined to a process by the
 * analysis: a header with that pid, a tensor and a driver block live at
 * the end) and as the walks before the end (holders.PID.oom.txt,
 * holders.PID.sig-1.txt), which the reports print; and as a build-id
 * symbol cache file (vt_symcache.c), raw and inside a valid first line and
 * checksum, so that its parser sees the bytes.  Must never crash, hang or leak.  tests/fuzz/replay.c replays
 * the corpus through it in every ctest run. */
#define _GNU_SOURCE /* fuzz_input.h */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "vt_analyze_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        __builtin_trap();
    if (size && fwrite(data, 1, size, f) != size)
        __builtin_trap();
    fclose(f);
}

static char dir[64], sym[96], hold[96], oom[96], sig[96], trace[96], cache[96];

static void cleanup(void)
{
    unlink(cache);
    unlink(sym);
    unlink(hold);
    unlink(oom);
    unlink(sig);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "%s/vt-fuzz-sidecar-%d", fuzz_tmpfs(), (int)getpid());
        mkdir(dir, 0700);
        snprintf(sym, sizeof(sym), "%s/t.zst.sym", dir);
        snprintf(hold, sizeof(hold), "%s/holders.7.txt", dir);
        snprintf(oom, sizeof(oom), "%s/holders.7.oom.txt", dir);
        snprintf(sig, sizeof(sig), "%s/holders.7.sig-1.txt", dir);
        snprintf(trace, sizeof(trace), "%s/t.zst", dir);
        snprintf(cache, sizeof(cache), "%s/01020304.cache", dir);
        atexit(cleanup);
    }
    /* the cache file: the bytes as they are, then framed as a writer frames
     * them (first line, E line with the entry count and FNV-1a) */
    for (int framed = 0; framed < 2; framed++) {
        FILE *f = fopen(cache, "wb");
        if (!f)
            __builtin_trap();
        const char *head = "vramtrace-symcache 1 01020304\n";
        uint64_t h = 1469598103934665603ull, n = 0;
        if (framed) {
            for (const char *c = head; *c; c++)
                h = (h ^ (uint8_t)*c) * 1099511628211ull;
            for (size_t i = 0; i < size; i++) {
                h = (h ^ data[i]) * 1099511628211ull;
                n += data[i] == 'S' && (i == 0 || data[i - 1] == '\n');
            }
            fputs(head, f);
        }
        if (size && fwrite(data, 1, size, f) != size)
            __builtin_trap();
        if (framed)
            fprintf(f, "E %llu %llx\n", (unsigned long long)n, (unsigned long long)h);
        fclose(f);
        vt_symbolizer *cs;
        if (vt_symbolizer_create(&cs, NULL) == 0) {
            static const uint8_t cbid[4] = {1, 2, 3, 4};
            vt_symbolizer_set_cache(cs, dir);
            const vt_symres *r = vt_symbolizer_lookup(cs, "/nonexistent/lib.so", cbid, 4, 0x10);
            for (uint32_t i = 0; r && i < r->nlines; i++)
                if (r->lines[i].function && !r->lines[i].function[0])
                    __builtin_trap(); /* empty names are read as none */
            vt_symbolizer_free(cs);
        }
    }
    char msg[600];
    put(sym, data, size);
    vt_symbolizer *s;
    if (vt_symbolizer_create(&s, NULL) == 0) {
        static const uint8_t bid[4] = {1, 2, 3, 4};
        vt_symbols_load(s, sym, msg, sizeof(msg));
        const vt_symres *r = vt_symbolizer_lookup(s, "/nonexistent/lib.so", bid, 4, 0x10);
        for (uint32_t i = 0; r && i < r->nlines; i++)
            if (r->lines[i].function && !r->lines[i].function[0])
                __builtin_trap(); /* empty names are read as none */
        vt_symbolizer_free(s);
    }
    put(hold, data, size);
    put(oom, data, size);
    put(sig, data, size);
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    cfg.progress = 0;
    vt_analysis *a;
    if (vt_analysis_create(&a, &cfg))
        return 0;
    if (vt_analysis_begin_process(a, trace) == 0) {
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_HEADER;
        ev.u.header.pid = 7;
        vt_analysis_feed(a, &ev);
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_ALLOC;
        ev.time_ns = 1000;
        ev.u.alloc = (vt_ev_alloc){.address = 0x1000, .size = 4096, .kind = VT_MEM_TENSOR,
                                   .api = VT_API_CACHING_ALLOCATOR};
        vt_analysis_feed(a, &ev);
        ev.u.alloc = (vt_ev_alloc){.address = 0x1000, .size = 1 << 20, .kind = VT_MEM_DEVICE, .api = VT_API_MALLOC};
        vt_analysis_feed(a, &ev);
        vt_analysis_finish(a);
        static FILE *null; /* opened once: an open per input is kernel time the target does not need */
        if (!null && !(null = fopen("/dev/null", "w")))
            __builtin_trap();
        vt_report_text(a, null);
        vt_report_json(a, null);
        fflush(null);
    }
    vt_analysis_free(a);
    return 0;
}
