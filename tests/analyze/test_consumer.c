/* test_consumer.c - the replay's consumer interface (vt_analysis_set_consumer)
 * over real traces: the blocks it hands out account for every live byte
 * the replay reports at every event, every block ended was begun, and the
 * report with a consumer (the full path for every event) is byte for byte
 * the report without one (the hot paths).
 *   test_consumer TRACE...   exit 0 when every check holds */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze.h"
#include "vt_analyze_int.h"
#include "vt_error.h"

#define MAXD 64

typedef struct {
    int64_t live[MAXD][VT_MEM__COUNT]; /* from the blocks alone */
    vt_map open;                       /* address + 1 -> size (non-VMM blocks) */
    uint64_t begins, ends, events, with_blocks, mismatches, unknown_ends;
} tally;

/* an open block's key: the caching allocator's tensors lie at their
 * segments' addresses, told apart by their API */
static uint64_t okey(const vt_replay_block *b)
{
    return (b->address << 1 | (b->api == VT_API_CACHING_ALLOCATOR)) + 1;
}

static int on_event(void *ctx, const vt_replay_event *re)
{
    tally *t = ctx;
    t->events++;
    if (!re->ev)
        return VT_ERR_INVALID;
    for (unsigned i = 0; i < re->nblocks; i++) {
        const vt_replay_block *b = &re->blocks[i];
        if (b->device >= MAXD || b->kind >= VT_MEM__COUNT || b->t < b->t_alloc) {
            t->mismatches++;
            continue;
        }
        if (b->op == VT_BLOCK_BEGIN) {
            t->begins++;
            t->live[b->device][b->kind] += (int64_t)b->size;
            if (b->api != VT_API_VMM && vt_map_put(&t->open, okey(b), b->size))
                return VT_ERR_NOMEM;
        } else {
            t->ends++;
            t->live[b->device][b->kind] -= (int64_t)b->size;
            uint64_t sz;
            if (b->api != VT_API_VMM && (!vt_map_del(&t->open, okey(b), &sz) || sz != b->size))
                t->unknown_ends++;
        }
    }
    if (re->nblocks) {
        t->with_blocks++;
        const uint32_t d = re->blocks[0].device;
        for (unsigned k = 0; k < VT_MEM__COUNT; k++)
            if (d < MAXD && t->live[d][k] != re->live_kind[k])
                t->mismatches++;
    }
    return 0;
}

static char *report(const char *path, tally *t, size_t *len)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    vt_analysis *a;
    if (vt_analysis_create(&a, &cfg))
        return NULL;
    if (t)
        vt_analysis_set_consumer(a, on_event, t);
    vt_analysis_add_file(a, path); /* a damaged fixture keeps what it read */
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (vt_analysis_finish(a) || vt_report_json(a, f)) {
        fclose(f);
        free(buf);
        vt_analysis_free(a);
        return NULL;
    }
    fclose(f);
    vt_analysis_free(a);
    return buf;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        tally *t = calloc(1, sizeof(*t));
        size_t la = 0, lb = 0;
        char *ra = report(argv[i], NULL, &la);
        char *rb = report(argv[i], t, &lb);
        int same = ra && rb && la == lb && !memcmp(ra, rb, la);
        int ok = same && t->mismatches == 0 && t->unknown_ends == 0 && t->begins >= t->ends && t->begins > 0;
        printf("%s: %s: %llu events, %llu with blocks, %llu begun, %llu ended, %llu open at the end, "
               "%llu live mismatches, %llu ends of unknown blocks, reports %s\n",
               argv[i], ok ? "ok" : "FAIL", (unsigned long long)t->events, (unsigned long long)t->with_blocks,
               (unsigned long long)t->begins, (unsigned long long)t->ends, (unsigned long long)t->open.len,
               (unsigned long long)t->mismatches, (unsigned long long)t->unknown_ends,
               same ? "identical" : "DIFFER");
        bad |= !ok;
        vt_map_free(&t->open);
        free(t);
        free(ra);
        free(rb);
    }
    return bad;
}
