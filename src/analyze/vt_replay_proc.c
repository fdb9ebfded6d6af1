/* vt_replay_proc.c - a replayed process: create and free, its definition
 * tables, notes, what a stack is made of. */
#include "vt_replay_int.h"
/* ----------------------------------------------------------- processes */

char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

int vt_proc_create(vt_proc **out, const char *name)
{
    vt_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return VT_ERR_NOMEM;
    p->name = xstrdup(name ? name : "-");
    *out = p;
    return 0;
}

void vt_proc_free(vt_proc *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->host);
    free(p->program);
    free(p->clock);
    for (uint32_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    free(p->env_rank);
    free(p->env_alloc_conf);
    free(p->env_world);
    free(p->env_xla_alloc);
    free(p->env_tf_alloc);
    free(p->tool_version);
    vt_tests_free(p);
    for (size_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->frames);
    for (size_t i = 0; i < p->nstacks; i++)
        free(p->stacks[i].frames);
    free(p->stacks);
    for (size_t i = 0; i < p->nmodules; i++) {
        free(p->modules[i].path);
        free(p->modules[i].build_id);
    }
    free(p->modules);
    free(p->launch_name);
    for (size_t i = 0; i < p->nunits; i++) {
        free(p->units[i].floor);
        free(p->units[i].key);
        free(p->units[i].mkey);
    }
    free(p->units);
    vt_map_free(&p->unitmap);
    free(p->blocks.slots);
    free(p->old.slots);
    free(p->old_filter);
    free(p->stack_unit);
    free(p->lstat_by_launch);
    vt_map_free(&p->vmm_handles);
    free(p->vmms);
    free(p->vmm_free);
    vt_map_free(&p->vmm_maps);
    vt_map_free(&p->vmm_map_size);
    vt_map_free(&p->vmm_reserves);
    free(p->freed_cache);
    vt_proc_free_holders(p);
    for (int i = 0; i < VT_MAX_DEVICES; i++) {
        free(p->dev[i].name);
        free(p->dev[i].series);
    }
    free(p->tail);
    free(p->late);
    for (size_t i = 0; i < p->nlstats; i++)
        free(p->lstats[i].occ.t);
    free(p->lstats);
    vt_map_free(&p->lstat_map);
    for (size_t i = 0; i < p->nnvtx; i++) {
        free(p->nvtx[i].msg);
        free(p->nvtx[i].occ.t);
    }
    free(p->nvtx);
    free(p->step_source);
    for (size_t i = 0; i < p->npools; i++)
        free(p->pools[i].s);
    free(p->pools);
    for (uint32_t i = 0; i < p->noom; i++)
        free(p->oom[i].error_name);
    for (uint32_t i = 0; i < p->nnotes; i++)
        free(p->notes[i]);
    for (uint32_t i = 0; i < p->nerrors; i++)
        free(p->errors[i]);
    free(p->leak_order);
    free(p->growth_order);
    free(p);
}

/* grow a table indexed by id to hold `id` */
int grow_table(void **tab, size_t *n, size_t elem, uint32_t id)
{
    if (id == 0 || id >= VT_MAX_ID)
        return VT_ERR_CORRUPT;
    if (id < *n)
        return 0;
    size_t ncap = *n ? *n : 64;
    while (ncap <= id)
        ncap *= 2;
    void *t = realloc(*tab, ncap * elem);
    if (!t)
        return VT_ERR_NOMEM;
    memset((char *)t + *n * elem, 0, (ncap - *n) * elem);
    *tab = t;
    *n = ncap;
    return 0;
}

const char *vt_proc_string(const vt_proc *p, uint32_t id)
{
    return id && id < p->nstrings ? p->strings[id] : NULL;
}

uint32_t vt_proc_stack(const vt_proc *p, uint32_t stack, uint32_t *out, uint32_t max)
{
    uint32_t n = 0, guard = 0;
    while (stack && stack < p->nstacks && guard++ < 4096) {
        const vt_pstack *s = &p->stacks[stack];
        if (!s->frames && !s->nframes && !s->parent)
            break;
        for (uint32_t i = 0; i < s->nframes; i++, n++)
            if (n < max)
                out[n] = s->frames[i];
        if (s->parent >= stack) /* parents are defined first: no cycles */
            break;
        stack = s->parent;
    }
    return n;
}

void add_note(vt_proc *p, int sev, const char *text)
{
    if (p->nnotes >= VT_MAX_NOTES) {
        p->notes_more++;
        return;
    }
    p->note_sev[p->nnotes] = sev;
    p->notes[p->nnotes++] = xstrdup(text ? text : "");
}

int is_resident(unsigned kind)
{
    return kind == VT_MEM_DEVICE || kind == VT_MEM_DEVICE_STATIC || kind == VT_MEM_ARRAY;
}

int vt_stack_is_c10(const vt_proc *p, uint32_t stack)
{
    uint32_t fr[VT_MAX_STACK];
    uint32_t n = vt_proc_stack(p, stack, fr, VT_MAX_STACK);
    if (n > VT_MAX_STACK)
        n = VT_MAX_STACK;
    for (uint32_t i = 0; i < n; i++) {
        if (fr[i] >= p->nframes)
            continue;
        const vt_pframe *f = &p->frames[fr[i]];
        if (f->kind == VT_FRAME_NATIVE && f->module && f->module < p->nmodules && p->modules[f->module].c10)
            return 1;
    }
    return 0;
}

void vt_proc_add_note(vt_proc *p, int sev, const char *text)
{
    add_note(p, sev, text);
}
