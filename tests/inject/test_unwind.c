/* test_unwind.c - the native unwinder and the module map (src/inject/vt_unwind.c).
 * Built twice (tests.cmake): the call chain in unwind_chain.c with and
 * without frame pointers.  The reference is glibc backtrace(). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind_chain.h"
#include "vt_error.h"
#include "vt_unwind.h"

#ifndef DLMOD_PATH
#error DLMOD_PATH must name the test shared object
#endif

/* The function containing ip (by dladdr), "" if unknown. */
static const char *fn_of(uint64_t ip)
{
    Dl_info di;
    if (dladdr((void *)(uintptr_t)(ip - 1), &di) && di.dli_sname)
        return di.dli_sname;
    return "";
}

static void check_chain_against_backtrace(vt_unwinder *u)
{
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 64;
    chain_a(u, &r, 5);
    assert_true(r.n >= 5);
    assert_true(r.nbt >= 5);
    /* [0] differs (two call sites in chain_c); from [1] on both walk the same frames */
    assert_string_equal(fn_of(r.ips[0]), "chain_c");
    assert_string_equal(fn_of(r.ips[1]), "chain_b");
    assert_string_equal(fn_of(r.ips[2]), "chain_a");
    /* backtrace()'s own frames first: none normally, one under ASan, whose
     * interceptor wraps backtrace(); align on chain_c */
    int k = 0;
    while (k < r.nbt && strcmp(fn_of((uint64_t)(uintptr_t)r.bt[k]), "chain_c") != 0)
        k++;
    assert_true(k <= 2 && k < r.nbt);
    int common = r.n < r.nbt - k ? r.n : r.nbt - k;
    for (int i = 1; i < common; i++) {
        if (r.ips[i] != (uint64_t)(uintptr_t)r.bt[i + k])
            fail_msg("frame %d: unwinder %#lx (%s) backtrace %p (%s)", i, (unsigned long)r.ips[i], fn_of(r.ips[i]),
                     r.bt[i + k], fn_of((uint64_t)(uintptr_t)r.bt[i + k]));
    }
    /* the walk reaches as far as backtrace() (within one frame: _start) */
    assert_true(r.n >= r.nbt - k - 1);
}

static vt_unwinder *g_u;
static int g_cb_count;
static char g_cb_last[512];

static void module_cb(void *arg, const vt_module *m)
{
    (void)arg;
    g_cb_count++;
    snprintf(g_cb_last, sizeof(g_cb_last), "%s", m->path);
}

static int setup(void **state)
{
    (void)state;
    g_cb_count = 0;
    return vt_unwinder_create(&g_u, 0, module_cb, NULL);
}
static int teardown(void **state)
{
    (void)state;
    vt_unwinder_free(g_u);
    g_u = NULL;
    return 0;
}

static void test_matches_backtrace(void **state)
{
    (void)state;
    check_chain_against_backtrace(g_u);
    /* second time from the cache: identical */
    vt_unwind_stats s1, s2;
    vt_unwinder_get_stats(g_u, &s1);
    check_chain_against_backtrace(g_u);
    vt_unwinder_get_stats(g_u, &s2);
    assert_true(s2.cache_hits > s1.cache_hits);
    assert_int_equal(s2.stops_unknown, s1.stops_unknown);
}

static void *thread_main(void *arg)
{
    (void)arg;
    check_chain_against_backtrace(g_u);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}

static void test_depth_cap_and_recursion(void **state)
{
    (void)state;
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 4;
    chain_rec(g_u, &r, 50);
    assert_int_equal(r.n, 4);
    assert_string_equal(fn_of(r.ips[0]), "chain_c");
    assert_string_equal(fn_of(r.ips[3]), "chain_rec");
    r.max = 256;
    chain_rec(g_u, &r, 100);
    /* chain_c, chain_b, chain_a, 101 x chain_rec, then the test's own frames */
    assert_true(r.n > 104);
    for (int i = 3; i < 104; i++)
        assert_string_equal(fn_of(r.ips[i]), "chain_rec");
}

/* Keyed captures: a walk is replayed only from an entry of the same key,
 * and every key gives the same walk. */
static void test_memo_keys(void **state)
{
    (void)state;
    chain_result ref;
    memset(&ref, 0, sizeof(ref));
    ref.max = 64;
    chain_rec(g_u, &ref, 6);
    /* key 0 (none) first: its first walk caches the rule of this loop's
     * call site, and a walk with a rule miss is not kept */
    for (uint64_t key = 0; key <= 40; key++) { /* more keys than the memo has entries */
        for (int rep = 0; rep < 2; rep++) {
            vt_unwind_stats s1, s2;
            vt_unwinder_get_stats(g_u, &s1);
            chain_result r;
            memset(&r, 0, sizeof(r));
            r.max = 64;
            r.xkey = key;
            chain_rec(g_u, &r, 6);
            vt_unwinder_get_stats(g_u, &s2);
            assert_int_equal(r.n, ref.n);
            /* chain_c, chain_b, chain_a, 7 x chain_rec; above them this test's
             * own call sites */
            for (int i = 0; i < 10; i++)
                assert_true(r.ips[i] == ref.ips[i]);
            assert_string_equal(fn_of(r.ips[9]), "chain_rec");
            /* the first walk of a key is not replayed whole, the second is */
            if (key >= 1 && s2.memo_full - s1.memo_full != (uint64_t)rep)
                fail_msg("key %lu rep %d: %lu walks replayed whole", (unsigned long)key, rep, (unsigned long)(s2.memo_full - s1.memo_full));
        }
    }
}

/* vt_unwinder_stop_at: the walk ends at the first frame inside a stop
 * range (the interpreter's eval loop in the library), the same from the
 * rule cache and from the memo, and goes on again once cleared. */
static void test_stop_at(void **state)
{
    (void)state;
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    assert_true(dladdr1((void *)&chain_a, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size);
    uint64_t lo = (uint64_t)(uintptr_t)di.dli_saddr, hi = lo + sym->st_size;
    assert_int_equal(vt_unwinder_stop_at(g_u, 1, &lo, &hi), 0);
    for (int rep = 0; rep < 3; rep++) { /* the second and third from the memo */
        chain_result r;
        memset(&r, 0, sizeof(r));
        r.max = 64;
        chain_rec(g_u, &r, 10);
        assert_int_equal(r.n, 3);
        assert_string_equal(fn_of(r.ips[0]), "chain_c");
        assert_string_equal(fn_of(r.ips[1]), "chain_b");
        assert_string_equal(fn_of(r.ips[2]), "chain_a");
    }
    vt_unwind_stats st;
    vt_unwinder_get_stats(g_u, &st);
    assert_int_equal(vt_unwinder_stop_at(g_u, 0, NULL, NULL), 0);
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 64;
    chain_rec(g_u, &r, 10);
    assert_true(r.n > 13);
    assert_int_equal(vt_unwinder_stop_at(g_u, 9, &lo, &hi), VT_ERR_INVALID);
    assert_int_equal(vt_unwinder_stop_at(g_u, 1, NULL, NULL), VT_ERR_INVALID);
}

/* The per-thread memo: a repeated walk is replayed whole, and a walk that
 * starts like a remembered one but differs further out (another caller at
 * the same stack depth) is told apart: same results as without a memo. */
static void test_memo(void **state)
{
    (void)state;
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 64;
    const char *want[] = {"chain_x", "chain_y"};
    int seq[] = {0, 0, 0, 1, 1, 1, 0, 1, 1, 0};
    vt_unwind_stats s0, s1;
    vt_unwinder_get_stats(g_u, &s0);
    int n_first = -1;
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        memset(r.ips, 0, sizeof(r.ips));
        chain_pick(g_u, &r, seq[i]);
        assert_true(r.n >= 4);
        assert_string_equal(fn_of(r.ips[0]), "chain_c");
        assert_string_equal(fn_of(r.ips[1]), want[seq[i]]);
        assert_string_equal(fn_of(r.ips[2]), "chain_pick");
        assert_true(r.ips[3] != 0); /* the test itself (static: no name for dladdr) */
        if (n_first < 0)
            n_first = r.n;
        assert_int_equal(r.n, n_first); /* same depth from both callers */
    }
    vt_unwinder_get_stats(g_u, &s1);
    /* calls 3, 6 and 9 repeat a walk remembered from a walk without rule-cache misses */
    assert_true(s1.memo_full - s0.memo_full >= 3);
    /* two callers at one depth, alternating: each keeps its own entry.  A
     * walk is remembered once it met no rule-cache miss, and this loop is
     * a new call site (a new return address): the first calls fill the
     * entries (one replayed at most), then every call is replayed whole.
     * (No branch in the loop: a compiler peeling an iteration would make
     * another call site.) */
    vt_unwinder_get_stats(g_u, &s0);
    for (int k = 0; k < 12; k++) {
        chain_pick(g_u, &r, k & 1);
        assert_string_equal(fn_of(r.ips[1]), want[k & 1]);
    }
    vt_unwinder_get_stats(g_u, &s1);
    assert_true(s1.memo_full - s0.memo_full >= 8);
    /* rbp holding data that changes from call to call (code without frame
     * pointers): the walk is the same, and so is the memo */
    vt_unwinder_get_stats(g_u, &s0);
    for (int x = 1; x <= 8; x++) {
        memset(r.ips, 0, sizeof(r.ips));
        chain_rbp_data(g_u, &r, x);
        assert_string_equal(fn_of(r.ips[0]), "chain_c");
        assert_string_equal(fn_of(r.ips[1]), "chain_x");
        assert_string_equal(fn_of(r.ips[2]), "chain_rbp_data");
        assert_int_equal(r.n, n_first);
    }
    vt_unwinder_get_stats(g_u, &s1);
    assert_true(s1.memo_full - s0.memo_full >= 6);
    /* the depth cap is part of the memo: a shorter walk from the same spot */
    r.max = 2;
    chain_pick(g_u, &r, 1);
    assert_int_equal(r.n, 2);
    assert_string_equal(fn_of(r.ips[1]), "chain_y");
}

/* One whole replay in 64 is described (vt_unwind_stats.sampled*): what it
 * read of this thread's stack lies within the stack, on at least one page
 * and no more pages than words, and its entry in one of the 32 ways.  Two
 * callers at one depth in turn share a tag: the way that followed the
 * previous capture last time is tried first, so that every replay finds
 * its entry first, with no candidate verified in vain.  With frame
 * pointers, the replay checks the saved rbp that each frame's CFA rests on
 * (chain_x's and chain_pick's at least). */
static void test_memo_sample(void **state)
{
    (void)state;
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 64;
    vt_unwind_stats s0, s1;
    vt_unwinder_get_stats(g_u, &s0);
    for (int k = 0; k < 256; k++)
        chain_pick(g_u, &r, k & 1);
    vt_unwinder_get_stats(g_u, &s1);
    uint64_t n = s1.sampled - s0.sampled, whole = s1.memo_full - s0.memo_full;
    assert_true(whole >= 200);
    assert_true(n >= whole / 64 - 1 && n <= whole / 64 + 1);
    uint64_t span = s1.sampled_span - s0.sampled_span, pages = s1.sampled_pages - s0.sampled_pages;
    assert_true(span >= n * 8 * (uint64_t)(r.n - 1)); /* at least a word per step read */
    assert_true(span <= n * (1u << 20));
    assert_true(pages >= n && pages <= n * (uint64_t)r.n);
    assert_true(s1.sampled_way - s0.sampled_way <= n * 31);
    assert_int_equal(s1.sampled_pred - s0.sampled_pred, n);
    assert_int_equal(s1.sampled_tried - s0.sampled_tried, 0);
    assert_int_equal(s1.sampled_wasted - s0.sampled_wasted, 0);
    if (CHAIN_FP)
        assert_true(s1.sampled_bp - s0.sampled_bp >= 2 * n);
}

/* Walk ids (the writer's stack references rest on them): one id always
 * comes with the same ips, the two callers at one depth get different
 * ids, a repeated walk keeps its id, and a walk recorded again after the
 * memo was retired gets a new one. */
static void test_walk_ids(void **state)
{
    (void)state;
    enum { N = 24 };
    chain_result r[N];
    uint64_t seen_id[2] = {0, 0};
    for (int k = 0; k < N; k++) {
        memset(&r[k], 0, sizeof(r[k]));
        r[k].max = 64;
        r[k].inplace = (k >> 1) & 1; /* both callers both ways: frames copied, frames in place */
        chain_pick(g_u, &r[k], k & 1);
        if (k >= 8) /* replayed whole: in place when asked */
            assert_int_equal(r[k].was_inplace, r[k].inplace);
        for (int j = 0; j < k; j++)
            if (r[k].walk && r[j].walk == r[k].walk) {
                assert_int_equal(r[j].n, r[k].n);
                assert_memory_equal(r[j].ips, r[k].ips, (size_t)r[k].n * sizeof(uint64_t));
            }
        if (k >= 4) { /* past the first walks (rule-cache misses are not memoized) */
            assert_true(r[k].walk != 0);
            if (!seen_id[k & 1])
                seen_id[k & 1] = r[k].walk;
            assert_true(r[k].walk == seen_id[k & 1]); /* replayed whole: the same id */
        }
    }
    assert_true(seen_id[0] != seen_id[1]);
    assert_true(r[N - 1].ips[1] != r[N - 2].ips[1]); /* the callers do differ */
    /* a stop range retires every memo: the walks are recorded again */
    uint64_t lo = 1, hi = 2;
    assert_int_equal(vt_unwinder_stop_at(g_u, 1, &lo, &hi), 0);
    assert_int_equal(vt_unwinder_stop_at(g_u, 0, NULL, NULL), 0);
    chain_result a[6]; /* one call site (the rules were dropped too: misses first) */
    for (int k = 0; k < 6; k++) {
        memset(&a[k], 0, sizeof(a[k]));
        a[k].max = 64;
        chain_pick(g_u, &a[k], 0);
    }
    assert_true(a[5].walk != 0 && a[5].walk != seen_id[0] && a[4].walk == a[5].walk);
    assert_memory_equal(a[5].ips, r[N - 2].ips, 3 * sizeof(uint64_t)); /* up to the call sites here */
}

static void test_rules(void **state)
{
    (void)state;
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 8;
    chain_a(g_u, &r, 5);
    int isbp, ra, bp, outer;
    int64_t off;
    /* the return address into chain_a (a 6000-byte frame) */
    assert_int_equal(vt_unwind_rule_describe(g_u, r.ips[2], &isbp, &off, &ra, &bp, &outer), 0);
    assert_int_equal(outer, 0);
    assert_int_equal(ra, 1);
    if (!isbp)
        assert_true(off > 6000);
    /* chain_b uses alloca: its CFA is rbp-based with or without frame pointers */
    assert_int_equal(vt_unwind_rule_describe(g_u, r.ips[1], &isbp, &off, &ra, &bp, &outer), 0);
    assert_int_equal(isbp, 1);
    assert_int_equal(off, 16);
    assert_int_equal(bp, 2);
    /* an address in no module */
    assert_int_equal(vt_unwind_rule_describe(g_u, 16, &isbp, &off, &ra, &bp, &outer), VT_ERR_NOT_FOUND);
}

/* Build-id of our own executable, read from the file. */
static int file_build_id(const char *path, uint8_t *out, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)sz);
    int got = -1;
    if (d && fread(d, 1, (size_t)sz, f) == (size_t)sz) {
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
        for (int i = 0; i < eh->e_shnum; i++) {
            const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh->e_shoff + (size_t)i * eh->e_shentsize);
            if (sh->sh_type != SHT_NOTE)
                continue;
            const uint8_t *p = d + sh->sh_offset, *end = p + sh->sh_size;
            while (p + sizeof(Elf64_Nhdr) <= end) {
                const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
                const uint8_t *name = p + sizeof(*nh);
                const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
                if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                    nh->n_descsz <= max) {
                    memcpy(out, desc, nh->n_descsz);
                    got = (int)nh->n_descsz;
                }
                p = desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    free(d);
    fclose(f);
    return got;
}

static void test_modmap(void **state)
{
    (void)state;
    const vt_modmap *m = vt_unwinder_modmap(g_u);
    assert_non_null(m);
    assert_true(vt_modmap_count(m) >= 3);
    assert_true(g_cb_count >= 3); /* every module of the first scan was reported */
    /* sorted, non-overlapping */
    for (size_t i = 1; i < vt_modmap_count(m); i++)
        assert_true(vt_modmap_get(m, i - 1)->end <= vt_modmap_get(m, i)->start);
    /* our own executable */
    const vt_module *self = vt_modmap_find(m, (uint64_t)(uintptr_t)&test_modmap);
    assert_non_null(self);
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(k > 0);
    exe[k] = 0;
    assert_string_equal(self->path, exe);
    assert_true(self->eh_frame_hdr >= self->start && self->eh_frame_hdr < self->end);
    uint8_t bid[32];
    int n = file_build_id(exe, bid, sizeof(bid));
    assert_int_equal(n, 20); /* linked with --build-id=sha1 */
    assert_int_equal(self->build_id_len, 20);
    assert_memory_equal(self->build_id, bid, 20);
    /* libc holds getpid (not printf: sanitizers interpose that one) */
    const vt_module *libc = vt_modmap_find(m, (uint64_t)(uintptr_t)&getpid);
    assert_non_null(libc);
    assert_non_null(strstr(libc->path, "libc"));
    Dl_info di;
    assert_true(dladdr((void *)&getpid, &di));
    assert_int_equal(libc->load_bias, (uint64_t)(uintptr_t)di.dli_fbase);
    assert_null(vt_modmap_find(m, 8));
}

static void test_library_loaded_later(void **state)
{
    (void)state;
    void *h = dlopen(DLMOD_PATH, RTLD_NOW);
    assert_non_null(h);
    void *(*fn)(void) = (void *(*)(void))dlsym(h, "vt_test_dlmod_fn");
    assert_non_null(fn);
    uint64_t ip = (uint64_t)(uintptr_t)fn() + 1;
    assert_null(vt_modmap_find(vt_unwinder_modmap(g_u), ip));
    struct timespec ts = {0, 150 * 1000000};
    nanosleep(&ts, NULL); /* rescans are rate-limited to one per 100 ms */
    int before = g_cb_count;
    uint64_t ips[4];
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    vt_unwind_from(g_u, ip, sp, 0, ips, 1);
    assert_int_equal(g_cb_count, before + 1);
    assert_non_null(strstr(g_cb_last, "vt_test_dlmod"));
    const vt_module *mod = vt_modmap_find(vt_unwinder_modmap(g_u), ip);
    assert_non_null(mod);
    assert_true(mod->build_id_len > 0);
    /* a leaf function's own ip: the rule is "CFA = rsp + 8" */
    int isbp, ra, bp, outer;
    int64_t off;
    assert_int_equal(vt_unwind_rule_describe(g_u, (uint64_t)(uintptr_t)fn + 1, &isbp, &off, &ra, &bp, &outer), 0);
    assert_int_equal(isbp, 0);
    assert_int_equal(off, 8);
    assert_int_equal(ra, 1);
    dlclose(h);
}

/* After a dlclose, the next rule-cache miss rescans before reading any CFI:
 * the unloaded module leaves the map. */
static void test_unload_rescans(void **state)
{
    (void)state;
    void *h = dlopen(DLMOD_PATH, RTLD_NOW);
    assert_non_null(h);
    void *(*fn)(void) = (void *(*)(void))dlsym(h, "vt_test_dlmod_fn");
    uint64_t ip = (uint64_t)(uintptr_t)fn() + 1;
    struct timespec ts = {0, 150 * 1000000};
    nanosleep(&ts, NULL);
    uint64_t ips[4];
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    vt_unwind_from(g_u, ip, sp, 0, ips, 1);
    assert_non_null(vt_modmap_find(vt_unwinder_modmap(g_u), ip));
    vt_unwind_stats s1, s2;
    vt_unwinder_get_stats(g_u, &s1);
    assert_int_equal(dlclose(h), 0);
    /* an ip never looked up before: a miss */
    vt_unwind_from(g_u, (uint64_t)(uintptr_t)&test_unload_rescans + 5, sp, 0, ips, 1);
    vt_unwinder_get_stats(g_u, &s2);
    assert_int_equal(s2.rescans, s1.rescans + 1);
    assert_null(vt_modmap_find(vt_unwinder_modmap(g_u), ip));
}

static void test_skip(void **state)
{
    (void)state;
    vt_unwinder *u;
    assert_int_equal(vt_unwinder_create(&u, 10, NULL, NULL), 0);
    /* skipping the module holding this test drops every frame of it */
    vt_unwinder_skip_addr(u, (const void *)&test_skip);
    chain_result r;
    memset(&r, 0, sizeof(r));
    r.max = 64;
    chain_a(u, &r, 5);
    const vt_module *self = vt_modmap_find(vt_unwinder_modmap(u), (uint64_t)(uintptr_t)&test_skip);
    assert_true(r.n >= 1);
    /* only the top is skipped: the walk continues through libc (and may
     * come back to this executable at _start) */
    assert_true(vt_modmap_find(vt_unwinder_modmap(u), r.ips[0]) != self);
    assert_non_null(strstr(vt_modmap_find(vt_unwinder_modmap(u), r.ips[0])->path, "libc"));
    vt_unwinder_free(u);
    vt_unwinder_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matches_backtrace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_depth_cap_and_recursion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_sample, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modmap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_library_loaded_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unload_rescans, setup, teardown),
        cmocka_unit_test(test_skip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
