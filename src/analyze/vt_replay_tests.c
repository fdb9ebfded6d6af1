/* vt_replay_tests.c - tests as ranges (docs/REPORT.md, "tests"): the
 * pytest plugin (src/python/vramtrace_pytest.py) brackets each test's call
 * with an NVTX range of the domain "vramtrace.test" (START with the node
 * id, END by range id; src/inject/vt_inject_test.c).  While one is open
 * the replay takes its full way for every event (vt_replay.c) and hands
 * the blocks each event began or ended here: a table of the blocks
 * allocated since the test began and not freed, and the running sum of
 * the counted ones for the peak.  At its end what is left becomes the
 * test's row: leaked bytes and blocks, and its call sites (units) by
 * bytes.  Memory: the blocks one test left live, freed at its end. */
#include "vt_replay_int.h"
#include "vt_grow.h"

/* Counted as the report counts rows (rep_counted, vt_report_model.c):
 * with tensor events (way 1) the tensors and device memory outside the
 * allocator's segments, without them (way 0) device-resident memory.  A
 * test that grows the allocator's first segment has no tensor unit yet:
 * both ways are followed, and its end takes the process's. */
static int test_counted(const vt_proc *p, uint32_t unit, int way)
{
    if (unit >= p->nunits)
        return 0;
    const vt_unit *u = &p->units[unit];
    const int resident = u->kind == VT_MEM_DEVICE || u->kind == VT_MEM_DEVICE_STATIC || u->kind == VT_MEM_ARRAY;
    if (way)
        return u->kind == VT_MEM_TENSOR || (resident && !u->segment);
    return resident;
}

static uint64_t test_key(const vt_replay_block *b)
{
    uint64_t k = b->address << 1 | (b->api == VT_API_CACHING_ALLOCATOR);
    return k ? k : 2; /* key 0 is the map's empty slot; address 0 is never a block */
}

/* Tests kept per process: a crafted trace of START records alone must
 * not take memory in proportion to them (later tests are not followed). */
#define VT_TESTS_MAX (1u << 18)

static int test_open(vt_proc *p, const char *name, uint64_t range, uint64_t t)
{
    if (p->ntests >= VT_TESTS_MAX)
        return 0;
    if (VT_GROW(p->tests, p->ntests, p->captests, 16))
        return VT_ERR_NOMEM;
    vt_test *x = &p->tests[p->ntests];
    memset(x, 0, sizeof(*x));
    x->name = xstrdup(name && *name ? name : "?");
    if (!x->name)
        return VT_ERR_NOMEM;
    x->t0 = x->t1 = t;
    p->ntests++;
    p->test_open = 1;
    p->test_range = range;
    memset(p->test_live, 0, sizeof(p->test_live));
    memset(p->test_peak, 0, sizeof(p->test_peak));
    memset(p->test_alloc, 0, sizeof(p->test_alloc));
    memset(p->test_allocs, 0, sizeof(p->test_allocs));
    return 0;
}

static int by_site_bytes(const void *pa, const void *pb)
{
    const vt_test_site_row *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/* The open test ends at t: what is left, by call site. */
static int test_close(vt_proc *p, uint64_t t, int ended)
{
    vt_test *x = &p->tests[p->ntests - 1];
    x->t1 = t >= x->t0 ? t : x->t0;
    x->ended = ended;
    p->test_open = 0;
    const int way = p->tensor_units != 0;
    x->allocated = p->test_alloc[way];
    x->allocs = p->test_allocs[way];
    x->peak = p->test_peak[way];
    /* per unit, in a small array: a test leaves few call sites */
    vt_test_site_row *rows = NULL;
    size_t nrows = 0, caprows = 0;
    vt_map row_of = {0};
    int rc = 0;
    for (size_t i = 0; i < p->test_blk.cap; i++) {
        const uint64_t k = p->test_blk.keys[i];
        if (!k)
            continue;
        const uint64_t size = p->test_blk.vals[i] & ~(3ull << 62);
        const uint64_t *up = vt_map_get(&p->test_unit, k);
        const uint32_t unit = up ? (uint32_t)*up : UINT32_MAX;
        if (!test_counted(p, unit, way))
            continue;
        x->leaked += size;
        x->leaked_blocks++;
        uint64_t *r = vt_map_get(&row_of, (uint64_t)unit + 1);
        if (!r) {
            if (VT_GROW(rows, nrows, caprows, 8) || vt_map_put(&row_of, (uint64_t)unit + 1, nrows)) {
                rc = VT_ERR_NOMEM;
                goto out;
            }
            rows[nrows++] = (vt_test_site_row){.unit = unit};
            r = vt_map_get(&row_of, (uint64_t)unit + 1);
        }
        rows[*r].bytes += size;
        rows[*r].blocks++;
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof(*rows), by_site_bytes);
    x->nsites = (uint32_t)nrows;
    for (size_t i = 0; i < nrows && i < VT_TEST_SITES; i++)
        x->site[i] = rows[i];
out:
    free(rows);
    vt_map_free(&row_of);
    vt_map_free(&p->test_blk);
    vt_map_free(&p->test_unit);
    memset(&p->test_blk, 0, sizeof(p->test_blk));
    memset(&p->test_unit, 0, sizeof(p->test_unit));
    return rc;
}

int vt_tests_nvtx(vt_proc *p, const vt_ev_nvtx *e, uint64_t t)
{
    const char *dom = e->domain ? e->domain : vt_proc_string(p, e->domain_id);
    if (!dom || strcmp(dom, VT_TEST_DOMAIN))
        return 0;
    if (e->op == VT_NVTX_START) {
        if (p->test_open && test_close(p, t, 0))
            return 1; /* out of memory: that test's row stays as far as it got */
        const char *msg = e->message ? e->message : vt_proc_string(p, e->message_id);
        test_open(p, msg, e->range_id, t);
    } else if (e->op == VT_NVTX_END && p->test_open && e->range_id == p->test_range) {
        test_close(p, t, 1);
    }
    return 1;
}

int vt_tests_blocks(vt_proc *p, const vt_replay_block *b, unsigned n)
{
    if (!p->test_open || !p->ntests)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        const uint64_t k = test_key(&b[i]);
        if (b[i].op == VT_BLOCK_BEGIN) {
            const uint64_t ways = (uint64_t)test_counted(p, b[i].unit, 0) << 63 |
                                  (uint64_t)test_counted(p, b[i].unit, 1) << 62;
            if (vt_map_put(&p->test_blk, k, (b[i].size & ~(3ull << 62)) | ways) ||
                vt_map_put(&p->test_unit, k, b[i].unit))
                return VT_ERR_NOMEM;
            for (int w = 0; w < 2; w++) {
                if (!(ways >> (63 - w) & 1))
                    continue;
                p->test_alloc[w] += b[i].size;
                p->test_allocs[w]++;
                p->test_live[w] += b[i].size;
                if (p->test_live[w] > p->test_peak[w])
                    p->test_peak[w] = p->test_live[w];
            }
        } else {
            uint64_t v;
            if (!vt_map_del(&p->test_blk, k, &v))
                continue; /* allocated before the test */
            vt_map_del(&p->test_unit, k, NULL);
            const uint64_t size = v & ~(3ull << 62);
            for (int w = 0; w < 2; w++)
                if (v >> (63 - w) & 1)
                    p->test_live[w] -= size <= p->test_live[w] ? size : p->test_live[w];
        }
    }
    return 0;
}

int vt_tests_finish(vt_proc *p)
{
    if (!p->test_open || !p->ntests)
        return 0;
    return test_close(p, p->t_last, 0);
}

void vt_tests_free(vt_proc *p)
{
    for (size_t i = 0; i < p->ntests; i++)
        free(p->tests[i].name);
    free(p->tests);
    p->tests = NULL;
    p->ntests = p->captests = 0;
    vt_map_free(&p->test_blk);
    vt_map_free(&p->test_unit);
}
