/* vt_holders.c - who holds a leaked block (issue 25): the holders file the
 * traced Python program wrote at exit (src/python/vramtrace_holders.py,
 * holders.PID.txt beside its trace) joined to the blocks live at the end
 * by storage address.  A part of the replay: it reads the block tables
 * after vt_proc_finish.  Touches: the holders file (read). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_grow.h"
#include "vt_replay_int.h"

#define HOLDERS_MAX_FILE (512u << 20)
#define HOLDERS_MAX 100000

static void holders_clear(vt_proc *p)
{
    for (size_t i = 0; i < p->nholders; i++) {
        free(p->holders[i].path);
        free(p->holders[i].type);
    }
    free(p->holders);
    p->holders = NULL;
    p->nholders = p->capholders = 0;
    free(p->holders_file);
    p->holders_file = NULL;
    for (uint32_t w = 0; w < p->nwalks; w++)
        for (uint32_t k = 0; k < p->walks[w].nh; k++) {
            free(p->walks[w].h[k].path);
            free(p->walks[w].h[k].type);
        }
    p->nwalks = 0;
}

/* An H line "H <tensors> <bytes> <graph bytes> <type>\t<path>" into h,
 * its type and path pointing into line (cut there); -1 if it is not one. */
static int parse_h(char *line, vt_holder *h)
{
    int pos = 0;
    memset(h, 0, sizeof(*h));
    if (sscanf(line, "H %" SCNu64 " %" SCNu64 " %" SCNu64 " %n", &h->tensors, &h->bytes, &h->graph_bytes, &pos) != 3 ||
        !pos)
        return -1;
    char *ty = line + pos, *tab = strchr(ty, '\t'), *end = ty + strcspn(ty, "\n");
    if (!tab || tab > end)
        return -1;
    *tab = 0;
    *end = 0;
    h->type = ty;
    h->path = tab + 1;
    return 0;
}

/* A walk before the end: its W, O or S, and H lines (P lines skipped);
 * the VT_WALK_TOP largest holders kept.  0, or -1 when the file is not a
 * holders file (then it is left out, said in msg). */
static int read_walk(const char *path, vt_walk *w, char *msg, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(w, 0, sizeof(*w));
    char line[8192];
    int rc = 0;
    if (!fgets(line, sizeof(line), f) || strcmp(line, "vramtrace-holders 1\n")) {
        snprintf(msg, len, "%.400s: line 1: not a vramtrace holders file (version 1), left out", path);
        rc = -1;
    }
    while (!rc && fgets(line, sizeof(line), f)) {
        unsigned lim = 0, dev = 0;
        double sec = 0;
        if (line[0] == 'W' && sscanf(line, "W %" SCNu64 " %lf %u", &w->objects, &sec, &lim) == 3) {
            w->seconds = sec;
            w->limited = lim != 0;
        } else if (line[0] == 'O' && sscanf(line, "O %u %" SCNu64 " %" SCNu64 " %" SCNu64, &dev, &w->request,
                                            &w->dev_allocated, &w->dev_free) == 4) {
            w->device = dev;
        } else if (line[0] == 'S') {
            sscanf(line, "S %d", &w->signal);
        } else if (line[0] == 'H') {
            vt_holder got;
            if (parse_h(line, &got))
                continue;
            const uint64_t by = got.bytes, gb = got.graph_bytes;
            /* keep the largest: replace the smallest kept when this one is larger */
            uint32_t slot = w->nh;
            if (w->nh == VT_WALK_TOP) {
                slot = 0;
                for (uint32_t k = 1; k < w->nh; k++)
                    if (w->h[k].bytes + w->h[k].graph_bytes < w->h[slot].bytes + w->h[slot].graph_bytes)
                        slot = k;
                if (w->h[slot].bytes + w->h[slot].graph_bytes >= by + gb)
                    continue;
                free(w->h[slot].path);
                free(w->h[slot].type);
            } else {
                w->nh++;
            }
            vt_holder *h = &w->h[slot];
            *h = got;
            h->path = xstrdup(got.path);
            h->type = xstrdup(got.type);
        }
    }
    fclose(f);
    /* largest first */
    for (uint32_t i = 1; i < w->nh; i++)
        for (uint32_t j = i; j > 0 && w->h[j].bytes + w->h[j].graph_bytes > w->h[j - 1].bytes + w->h[j - 1].graph_bytes; j--) {
            vt_holder t = w->h[j];
            w->h[j] = w->h[j - 1];
            w->h[j - 1] = t;
        }
    return rc;
}

/* the walks before the end beside the trace: .oom, then .sig-1, .sig-2 ... */
static void read_walks(vt_proc *p, const char *dir, int dl)
{
    char path[4400], msg[600];
    for (int i = 0; i < VT_WALKS_MAX && p->nwalks < VT_WALKS_MAX; i++) {
        char tag[32];
        if (i == 0)
            snprintf(tag, sizeof(tag), ".oom");
        else
            snprintf(tag, sizeof(tag), ".sig-%d", i);
        snprintf(path, sizeof(path), "%.*s/holders.%u%s.txt", dl, dir, p->pid, tag);
        struct stat st;
        if (stat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > HOLDERS_MAX_FILE) {
            if (i > 0)
                break; /* signal walks are numbered from 1 without gaps */
            continue;
        }
        msg[0] = 0;
        if (read_walk(path, &p->walks[p->nwalks], msg, sizeof(msg)) == 0)
            p->nwalks++;
        else if (msg[0])
            vt_proc_add_note(p, VT_SEV_WARNING, msg);
    }
}

void vt_proc_free_holders(vt_proc *p) { holders_clear(p); }

/* A block live at the end at storage address a: the caching allocator's
 * tensor there (*whole = 1: the storage keeps its whole block, as
 * memory_allocated() counts it), else the driver's block (a tensor of
 * --tensors mode or of backend:cudaMallocAsync). */
static int live_at(vt_proc *p, const vt_map *late, uint64_t a, int *whole, uint32_t *unit, uint64_t *size)
{
    vt_blockmap *t;
    /* a block freed after the view (the program's teardown, after the
     * walk at exit saw it live) counts as the walk saw it */
    for (int pass = 0; pass < 2; pass++) {
        uint64_t key = pass ? a : blk_key(a, VT_API_CACHING_ALLOCATOR);
        vt_block *b = blocks_lookup(p, key, &t);
        if (b) {
            *unit = b->unit;
            *size = b->size;
        } else {
            uint64_t *i = late->cap ? vt_map_get(late, key + 1) : NULL;
            if (!i)
                continue;
            *unit = p->late[*i].unit;
            *size = p->late[*i].size;
        }
        *whole = !pass;
        return 1;
    }
    return 0;
}

/* The walk at exit runs in a child that outlives the program
 * (src/python/vramtrace_holders.py, _detach): until it has written
 * holders.PID.txt it holds holders.PID.pending locked, and the lock goes
 * with the child however it ends.  Waits for it at most wait_s seconds,
 * saying so on stderr after a fifth of a second; 1 if it still runs. */
static int walk_pending(const char *dir, int dl, uint32_t pid, double wait_s)
{
    char path[4400];
    snprintf(path, sizeof(path), "%.*s/holders.%u.pending", dl, dir, pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    int running = 0, said = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        double waited = 0;
        while (flock(fd, LOCK_SH | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR)
                break;
            if (waited >= wait_s) {
                running = 1;
                break;
            }
            if (!said && waited >= 0.2) {
                fprintf(stderr,
                        "vramtrace: waiting for the holder walk of process %u, which runs after the "
                        "program ends (%s)...\n",
                        pid, path);
                said = 1;
            }
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            waited += 0.05;
        }
    }
    close(fd);
    return running;
}

int vt_proc_join_holders(vt_proc *p, const char *trace_path, double wait_s, char *msg, size_t len)
{
    msg[0] = 0;
    holders_clear(p);
    if (!p->pid || !trace_path)
        return 0;
    char path[4300];
    const char *slash = strrchr(trace_path, '/');
    int dl = slash ? (int)(slash - trace_path) : 1;
    read_walks(p, slash ? trace_path : ".", dl);
    if (walk_pending(slash ? trace_path : ".", dl, p->pid, wait_s)) {
        if (wait_s > 0) {
            snprintf(msg, len,
                     "the holder walk of process %u was still running after %.0f s: its holders are not "
                     "in this report (run it again when holders.%u.pending is gone)",
                     p->pid, wait_s, p->pid);
            return VT_ERR_IO;
        }
        return 0;
    }
    snprintf(path, sizeof(path), "%.*s/holders.%u.txt", dl, slash ? trace_path : ".", p->pid);
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) {
        /* a trace linked into a job's directory: its holders are beside
         * the file the link names */
        struct stat ls;
        char *real;
        if (!lstat(trace_path, &ls) && S_ISLNK(ls.st_mode) && (real = realpath(trace_path, NULL))) {
            int rc = strcmp(real, trace_path) ? vt_proc_join_holders(p, real, wait_s, msg, len) : 0;
            free(real);
            return rc;
        }
        return 0; /* none: the program was not walked (no torch, --no-holders) */
    }
    if ((uint64_t)st.st_size > HOLDERS_MAX_FILE) {
        snprintf(msg, len, "%s: %lld bytes: more than a holders file holds, not read", path, (long long)st.st_size);
        return VT_ERR_TOO_LARGE;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    p->holders_file = xstrdup(path);
    char line[8192];
    uint64_t ln = 0;
    int rc = 0;
    vt_map pairs = {0}; /* unit << 32 | holder -> bytes joined */
    vt_map late = {0};  /* table key + 1 -> its vt_late (blocks freed after the view) */
    for (size_t i = 0; i < p->nlate; i++)
        if (vt_map_put(&late, p->late[i].key + 1, i)) {
            rc = VT_ERR_NOMEM;
            goto out;
        }
    if (!fgets(line, sizeof(line), f) || strcmp(line, "vramtrace-holders 1\n")) {
        snprintf(msg, len, "%s: line 1: not a vramtrace holders file (version 1)", path);
        rc = VT_ERR_VERSION;
        goto out;
    }
    ln = 1;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        if (line[0] == 'W') {
            double sec = 0;
            unsigned lim = 0;
            if (sscanf(line, "W %" SCNu64 " %lf %u", &p->walk_objects, &sec, &lim) == 3) {
                p->walk_seconds = sec;
                p->walk_limited = lim != 0;
                continue;
            }
        } else if (line[0] == 'H' && p->nholders < HOLDERS_MAX) {
            vt_holder got;
            if (parse_h(line, &got) == 0) {
                if (VT_GROW(p->holders, p->nholders, p->capholders, 64)) {
                    rc = VT_ERR_NOMEM;
                    goto out;
                }
                vt_holder *h = &p->holders[p->nholders++];
                *h = got;
                h->type = xstrdup(got.type);
                h->path = xstrdup(got.path);
                continue;
            }
        } else if (line[0] == 'P' && p->nholders) {
            uint64_t a, nb;
            unsigned g;
            if (sscanf(line, "P %" SCNx64 " %" SCNu64 " %u", &a, &nb, &g) == 3) {
                int whole;
                uint32_t bunit;
                uint64_t bsize;
                if (live_at(p, &late, a, &whole, &bunit, &bsize)) {
                    uint64_t key = (uint64_t)bunit << 32 | (uint32_t)(p->nholders - 1);
                    uint64_t *v = vt_map_get(&pairs, key + 1);
                    uint64_t sz = whole || bsize < nb || !nb ? bsize : nb;
                    if (v)
                        *v += sz;
                    else if (vt_map_put(&pairs, key + 1, sz)) {
                        rc = VT_ERR_NOMEM;
                        goto out;
                    }
                    p->holders[p->nholders - 1].joined_bytes += sz;
                }
                continue;
            }
        } else if (line[0] == 'H') {
            continue; /* past HOLDERS_MAX: counted in none */
        }
        snprintf(msg, len, "%s: line %" PRIu64 ": not a holders line (W, H or P)", path, ln);
        rc = VT_ERR_CORRUPT;
        break;
    }
    /* each unit: the holder that holds most of its live bytes */
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        u->holder = 0;
        u->held_bytes = 0;
    }
    for (size_t i = 0; i < pairs.cap; i++) {
        if (!pairs.keys || !pairs.keys[i])
            continue;
        uint64_t key = pairs.keys[i] - 1, by = pairs.vals[i];
        uint32_t unit = (uint32_t)(key >> 32), h = (uint32_t)key;
        if (unit < p->nunits && by > p->units[unit].held_bytes) {
            p->units[unit].held_bytes = by;
            p->units[unit].holder = h + 1;
        }
    }
out:
    vt_map_free(&pairs);
    vt_map_free(&late);
    fclose(f);
    return rc;
}
