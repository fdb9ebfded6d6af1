/* vt_config.c - environment parsing and output naming for the injection
 * library.  Pure functions over a caller-supplied lookup; no global state.
 */
#define _GNU_SOURCE
#include "vt_config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_settings.h"

static const char *env_lookup(vt_getenv_fn f, void *arg, const char *name)
{
    return f ? f(name, arg) : getenv(name);
}

int vt_config_bool(const char *s)
{
    if (!s)
        return -1;
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

static void warn(vt_inject_config *c, const char *name, const char *v)
{
    if (!c->warning[0])
        snprintf(c->warning, sizeof(c->warning), "%s=%s ignored (invalid value)", name, v);
}

static void get_bool(vt_inject_config *c, vt_getenv_fn f, void *arg, const char *name, int *out)
{
    const char *v = env_lookup(f, arg, name);
    if (!v || !*v)
        return;
    int b = vt_config_bool(v);
    if (b < 0)
        warn(c, name, v);
    else
        *out = b;
}

static void get_uint(vt_inject_config *c, vt_getenv_fn f, void *arg, const char *name, long lo, long hi,
                     int zero_ok, unsigned *out)
{
    const char *v = env_lookup(f, arg, name);
    if (!v || !*v)
        return;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || ((x < lo || x > hi) && !(zero_ok && x == 0)))
        warn(c, name, v);
    else
        *out = (unsigned)x;
}

void vt_config_parse(vt_inject_config *cfg, vt_getenv_fn lookup, void *arg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->output, sizeof(cfg->output), "%s", "vramtrace.%n.%p.zst");
    cfg->kernels = 1;
    cfg->native_stacks = 1;
    cfg->python_stacks = 1;
    cfg->stack_depth = VT_SET_STACK_DEPTH_DEFAULT;
    cfg->flush_ms = VT_SET_FLUSH_MS_DEFAULT;
    cfg->sample_ms = VT_SET_SAMPLE_MS_DEFAULT;
    cfg->static_mem = -1; /* auto */
    cfg->quiet = 0;
    cfg->stack_refs = 1;
    const char *o = env_lookup(lookup, arg, VT_ENV_OUTPUT);
    if (o && *o) {
        if (strlen(o) >= sizeof(cfg->output))
            warn(cfg, VT_ENV_OUTPUT, "(too long)");
        else
            snprintf(cfg->output, sizeof(cfg->output), "%s", o);
    }
    const char *ts = env_lookup(lookup, arg, VT_ENV_TORCH_SHIM);
    if (ts && *ts) {
        if (strlen(ts) >= sizeof(cfg->torch_shim))
            warn(cfg, VT_ENV_TORCH_SHIM, "(too long)");
        else
            snprintf(cfg->torch_shim, sizeof(cfg->torch_shim), "%s", ts);
    }
    get_bool(cfg, lookup, arg, VT_ENV_KERNELS, &cfg->kernels);
    const char *ns = env_lookup(lookup, arg, VT_ENV_NATIVE_STACKS);
    if (ns && !strcasecmp(ns, "full"))
        cfg->native_stacks = VT_CFG_NATIVE_FULL;
    else
        get_bool(cfg, lookup, arg, VT_ENV_NATIVE_STACKS, &cfg->native_stacks);
    get_bool(cfg, lookup, arg, VT_ENV_PYTHON_STACKS, &cfg->python_stacks);
    get_bool(cfg, lookup, arg, VT_ENV_STATIC, &cfg->static_mem);
    get_bool(cfg, lookup, arg, VT_ENV_QUIET, &cfg->quiet);
    get_bool(cfg, lookup, arg, VT_ENV_SELFTIME, &cfg->selftime);
    get_bool(cfg, lookup, arg, VT_ENV_STACK_REFS, &cfg->stack_refs);
    unsigned depth = (unsigned)cfg->stack_depth;
    get_uint(cfg, lookup, arg, VT_ENV_STACK_DEPTH, VT_SET_STACK_DEPTH_MIN, VT_SET_STACK_DEPTH_MAX, 0, &depth);
    cfg->stack_depth = (int)depth;
    get_uint(cfg, lookup, arg, VT_ENV_FLUSH_MS, VT_SET_FLUSH_MS_MIN, VT_SET_FLUSH_MS_MAX, 0, &cfg->flush_ms);
    get_uint(cfg, lookup, arg, VT_ENV_TORCH_SHIM_WAIT, 0, VT_SET_SHIM_WAIT_MAX, 0, &cfg->torch_shim_wait_s);
    get_uint(cfg, lookup, arg, VT_ENV_SAMPLE_MS, VT_SET_SAMPLE_MS_MIN, VT_SET_SAMPLE_MS_MAX, 1, &cfg->sample_ms);
    const char *ck = env_lookup(lookup, arg, VT_ENV_CLOCK);
    if (ck && *ck) {
        int m = vt_settings_clock(ck);
        if (m < 0)
            warn(cfg, VT_ENV_CLOCK, ck);
        else
            cfg->clock = m;
    }
}

static int put(char **p, char *end, char c)
{
    if (*p >= end)
        return -1;
    *(*p)++ = c;
    return 0;
}

static int put_clean(char **p, char *end, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (!(isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-'))
            c = '_';
        if (put(p, end, c))
            return -1;
    }
    return 0;
}

int vt_config_expand_output(const char *tmpl, const vt_output_vars *v, char *buf, size_t len)
{
    if (!buf || len == 0)
        return VT_ERR_INVALID;
    char *p = buf, *end = buf + len - 1;
    char num[32];
    for (const char *t = tmpl; *t; t++) {
        int rc;
        if (*t != '%' || !t[1]) {
            rc = put(&p, end, *t);
        } else {
            t++;
            switch (*t) {
            case 'p': snprintf(num, sizeof(num), "%u", v->pid); rc = put_clean(&p, end, num); break;
            case 'h': rc = put_clean(&p, end, v->host && *v->host ? v->host : "unknown"); break;
            case 'r': rc = put_clean(&p, end, v->rank && *v->rank ? v->rank : "0"); break;
            case 'n': rc = put_clean(&p, end, v->program && *v->program ? v->program : "unknown"); break;
            case '%': rc = put(&p, end, '%'); break;
            default: rc = put(&p, end, '%') || put(&p, end, *t); break;
            }
        }
        if (rc) {
            buf[0] = 0;
            return VT_ERR_TOO_LARGE;
        }
    }
    *p = 0;
    return 0;
}

static const char *base_name(const char *s)
{
    const char *b = strrchr(s, '/');
    return b ? b + 1 : s;
}

void vt_config_program_name(const char *const *argv, int argc, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = 0;
    if (!argv || argc <= 0 || !argv[0]) {
        snprintf(buf, len, "unknown");
        return;
    }
    const char *b = base_name(argv[0]);
    if (strncmp(b, "python", 6) == 0) {
        for (int i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (!a)
                break;
            if (strcmp(a, "-m") == 0 && i + 1 < argc && argv[i + 1]) {
                snprintf(buf, len, "%s", argv[i + 1]);
                return;
            }
            if (strcmp(a, "-c") == 0)
                break;
            if (strcmp(a, "-W") == 0 || strcmp(a, "-X") == 0) {
                i++;
                continue;
            }
            if (a[0] == '-')
                continue;
            const char *s = base_name(a);
            size_t n = strlen(s);
            if (n > 3 && strcmp(s + n - 3, ".py") == 0)
                n -= 3;
            if (n >= len)
                n = len - 1;
            memcpy(buf, s, n);
            buf[n] = 0;
            return;
        }
        snprintf(buf, len, "python");
        return;
    }
    snprintf(buf, len, "%s", b);
}

const char *vt_config_rank(vt_getenv_fn lookup, void *arg)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = env_lookup(lookup, arg, names[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}
