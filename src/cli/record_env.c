/* record_env.c - pure logic of `vramtrace record`: options, the traced
 * command's environment, PyTorch allocator configuration merging, locating
 * libvramtrace.so, output names.  No process handling here (that is
 * builtin-record.c); reads no environment variable itself. */
#include "record_env.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_settings.h"

/* ---- small string helpers ---------------------------------------------- */

/* Append printf-style text to buf (NUL-terminated, len bytes); truncates. */
static void appendf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strnlen(buf, len);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static void add_warning(char *warn, size_t len, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (warn[0])
        appendf(warn, len, "\n");
    appendf(warn, len, "%s", line);
}

/* ---- options ------------------------------------------------------------- */

/* Parse a decimal integer in [lo, hi]; 0 on success. */
static int parse_int(const char *s, int lo, int hi, int *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* --holders-signal: a signal the Python walk can wait for (not one that
 * kills or stops the program by design, nor SIGINT, which Python owns) */
static int holders_signal_ok(const char *s)
{
    static const char *const names[] = {"USR1", "USR2", "HUP", "PWR", "WINCH", "URG", "IO"};
    const char *n = strncmp(s, "SIG", 3) ? s : s + 3;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(n, names[i]))
            return 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end && v >= 1 && v <= 64 && v != 2 && v != 9 && v != 19)
        return 0;
    return -1;
}

enum { OPT_FLAG, OPT_INT, OPT_STR };

static const struct opt_def {
    const char *lng;  /* long name without "--" */
    char shrt;        /* short letter, 0 = none */
    int type;
    size_t off;       /* field in vt_record_opts */
    int value;        /* OPT_FLAG: value stored */
    int lo, hi;       /* OPT_INT: range */
    int zero_ok;      /* OPT_INT: 0 is accepted too (means off) */
    const char *one_of; /* OPT_STR: the values accepted, as said in the error; NULL = any */
    int (*valid)(const char *); /* OPT_STR with one_of: < 0 rejects */
} opt_defs[] = {
    {"output-dir", 'o', OPT_STR, offsetof(vt_record_opts, outdir), 0, 0, 0, 0, NULL, NULL},
    {"kernels", 0, OPT_FLAG, offsetof(vt_record_opts, kernels), 1, 0, 0, 0, NULL, NULL},
    {"no-kernels", 0, OPT_FLAG, offsetof(vt_record_opts, kernels), 0, 0, 0, 0, NULL, NULL},
    {"native-stacks", 0, OPT_FLAG, offsetof(vt_record_opts, native_stacks), 1, 0, 0, 0, NULL, NULL},
    {"no-native-stacks", 0, OPT_FLAG, offsetof(vt_record_opts, native_stacks), 0, 0, 0, 0, NULL, NULL},
    {"full-native-stacks", 0, OPT_FLAG, offsetof(vt_record_opts, native_stacks), 2, 0, 0, 0, NULL, NULL},
    {"python-stacks", 0, OPT_FLAG, offsetof(vt_record_opts, python_stacks), 1, 0, 0, 0, NULL, NULL},
    {"no-python-stacks", 0, OPT_FLAG, offsetof(vt_record_opts, python_stacks), 0, 0, 0, 0, NULL, NULL},
    {"static", 0, OPT_FLAG, offsetof(vt_record_opts, static_mem), 1, 0, 0, 0, NULL, NULL},
    {"no-static", 0, OPT_FLAG, offsetof(vt_record_opts, static_mem), 0, 0, 0, 0, NULL, NULL},
    /* Ranges as the library accepts them (vt_settings.h). */
    {"stack-depth", 0, OPT_INT, offsetof(vt_record_opts, stack_depth), 0, VT_SET_STACK_DEPTH_MIN, VT_SET_STACK_DEPTH_MAX, 0, NULL, NULL},
    {"flush-ms", 0, OPT_INT, offsetof(vt_record_opts, flush_ms), 0, VT_SET_FLUSH_MS_MIN, VT_SET_FLUSH_MS_MAX, 0, NULL, NULL},
    {"sample-ms", 0, OPT_INT, offsetof(vt_record_opts, sample_ms), 0, VT_SET_SAMPLE_MS_MIN, VT_SET_SAMPLE_MS_MAX, 1, NULL, NULL},
    {"clock", 0, OPT_STR, offsetof(vt_record_opts, clock), 0, 0, 0, 0, "auto, tsc, monotonic or cupti", vt_settings_clock},
    {"quiet", 'q', OPT_FLAG, offsetof(vt_record_opts, quiet), 1, 0, 0, 0, NULL, NULL},
    {"tensors", 0, OPT_FLAG, offsetof(vt_record_opts, tensors), 1, 0, 0, 0, NULL, NULL},
    {"no-tensor-events", 0, OPT_FLAG, offsetof(vt_record_opts, tensor_events), 0, 0, 0, 0, NULL, NULL},
    {"no-symbolize", 0, OPT_FLAG, offsetof(vt_record_opts, symbolize), 0, 0, 0, 0, NULL, NULL},
    {"no-symbol-cache", 0, OPT_FLAG, offsetof(vt_record_opts, symbol_cache), 0, 0, 0, 0, NULL, NULL},
    {"timings", 0, OPT_FLAG, offsetof(vt_record_opts, timings), 1, 0, 0, 0, NULL, NULL},
    {"no-holders", 0, OPT_FLAG, offsetof(vt_record_opts, holders), 0, 0, 0, 0, NULL, NULL},
    {"holders-signal", 0, OPT_STR, offsetof(vt_record_opts, holders_signal), 0, 0, 0, 0,
     "USR1, USR2, HUP, PWR, WINCH, URG, IO or a signal number", holders_signal_ok},
    {"live", 0, OPT_FLAG, offsetof(vt_record_opts, live), 1, 0, 0, 0, NULL, NULL},
    {"help", 'h', OPT_FLAG, offsetof(vt_record_opts, help), 1, 0, 0, 0, NULL, NULL},
};
#define N_OPT_DEFS (sizeof(opt_defs) / sizeof(opt_defs[0]))

int vt_record_parse_args(vt_record_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->kernels = o->native_stacks = o->python_stacks = o->static_mem = -1;
    o->stack_depth = o->flush_ms = o->sample_ms = -1;
    o->tensor_events = 1;
    o->symbolize = 1;
    o->symbol_cache = 1;
    o->holders = 1;
    if (err && errlen)
        err[0] = 0;

    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the command starts here */

        const struct opt_def *d = NULL;
        const char *val = NULL; /* inline value: --opt=V or -oV */
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            for (size_t k = 0; k < N_OPT_DEFS; k++)
                if (strlen(opt_defs[k].lng) == nlen && !strncmp(opt_defs[k].lng, name, nlen))
                    d = &opt_defs[k];
            if (eq)
                val = eq + 1;
        } else {
            for (size_t k = 0; k < N_OPT_DEFS; k++)
                if (opt_defs[k].shrt && opt_defs[k].shrt == a[1])
                    d = &opt_defs[k];
            if (d && a[2])
                val = a + 2;
        }
        if (!d) {
            snprintf(err, errlen, "unknown option '%s'", a);
            return VT_ERR_INVALID;
        }
        char *field = (char *)o + d->off;
        if (d->type == OPT_FLAG) {
            if (val) {
                snprintf(err, errlen, "option '%s' takes no value", a);
                return VT_ERR_INVALID;
            }
            *(int *)field = d->value;
            i++;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option '%s' needs a value", a);
                return VT_ERR_INVALID;
            }
            val = argv[++i];
        }
        if (d->type == OPT_STR) {
            if (!*val) {
                snprintf(err, errlen, "option '%s' needs a non-empty value", a);
                return VT_ERR_INVALID;
            }
            if (d->valid && d->valid(val) < 0) {
                snprintf(err, errlen, "option --%s: '%s' is not %s", d->lng, val, d->one_of);
                return VT_ERR_INVALID;
            }
            *(const char **)field = val;
        } else if (!(d->zero_ok && !strcmp(val, "0")) &&
                   parse_int(val, d->lo, d->hi, (int *)field)) {
            snprintf(err, errlen, "option --%s: '%s' is not %sa whole number in %d..%d", d->lng,
                     val, d->zero_ok ? "0 or " : "", d->lo, d->hi);
            return VT_ERR_INVALID;
        } else if (d->zero_ok && !strcmp(val, "0")) {
            *(int *)field = 0;
        }
        i++;
    }
    o->cmd_index = i;
    return 0;
}

/* ---- PyTorch allocator configuration ------------------------------------ */

/* Keys that only PyTorch's native caching allocator honours. */
static const char *const native_only_keys[] = {
    "max_split_size_mb", "max_non_split_rounding_mb", "garbage_collection_threshold",
    "roundup_power2_divisions", "expandable_segments",
};

/* Trim spaces (PyTorch's lexer drops them) into [*b, *e). */
static void trim(const char **b, const char **e)
{
    while (*b < *e && isspace((unsigned char)**b))
        (*b)++;
    while (*e > *b && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

static int span_eq(const char *b, const char *e, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(e - b) == n && !strncmp(b, s, n);
}

int vt_record_merge_alloc_conf(const char *var, const char *user, char **out, char *warn,
                               size_t warnlen)
{
    static const char want[] = "backend:cudaMallocAsync";
    if (warn && warnlen)
        warn[0] = 0;
    if (!user)
        user = "";
    size_t cap = strlen(user) + 2 * sizeof(want) + 4;
    char *res = malloc(cap);
    if (!res)
        return VT_ERR_NOMEM;
    res[0] = 0;
    int have_backend = 0;

    const char *p = user;
    while (*p) {
        /* One top-level item: up to a ',' outside brackets. */
        const char *b = p;
        int depth = 0;
        while (*p && !(*p == ',' && depth == 0)) {
            if (*p == '[')
                depth++;
            else if (*p == ']' && depth > 0)
                depth--;
            p++;
        }
        const char *e = p;
        if (*p == ',')
            p++;
        trim(&b, &e);
        if (b == e)
            continue; /* empty item: dropped */

        const char *colon = memchr(b, ':', (size_t)(e - b));
        const char *kb = b, *ke = colon ? colon : e;
        trim(&kb, &ke);
        const char *vb = colon ? colon + 1 : e, *ve = e;
        trim(&vb, &ve);

        const char *item = NULL; /* replacement text, NULL = keep verbatim */
        if (span_eq(kb, ke, "backend")) {
            if (have_backend) {
                add_warning(warn, warnlen, "%s: a second backend (%.*s) was dropped", var,
                            (int)(e - b), b);
                continue;
            }
            have_backend = 1;
            if (!span_eq(vb, ve, "cudaMallocAsync") && !span_eq(vb, ve, "async")) {
                add_warning(warn, warnlen,
                            "%s: --tensors replaces your 'backend:%.*s' with '%s'", var,
                            (int)(ve - vb), vb, want);
                item = want;
            }
        } else {
            for (size_t k = 0; k < sizeof(native_only_keys) / sizeof(native_only_keys[0]); k++)
                if (span_eq(kb, ke, native_only_keys[k])) {
                    if (!strcmp(native_only_keys[k], "expandable_segments") &&
                        !span_eq(vb, ve, "True"))
                        break; /* expandable_segments:False is harmless */
                    add_warning(warn, warnlen,
                                "%s: '%.*s' has no effect with %s (--tensors); kept", var,
                                (int)(e - b), b, want);
                    break;
                }
        }
        if (res[0])
            strcat(res, ",");
        if (item)
            strcat(res, item);
        else
            strncat(res, b, (size_t)(e - b));
    }
    if (!have_backend) {
        if (res[0])
            strcat(res, ",");
        strcat(res, want);
    }
    *out = res;
    return 0;
}

/* ---- locating the library ------------------------------------------------ */

static int try_candidate(const char *path, char *out, size_t outlen, char *tried,
                         size_t triedlen)
{
    char real[PATH_MAX];
    if (tried)
        appendf(tried, triedlen, "%s%s", tried[0] ? "\n" : "", path);
    struct stat st;
    if (access(path, R_OK) != 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        !realpath(path, real))
        return 0;
    if (strlen(real) + 1 > outlen)
        return 0;
    strcpy(out, real);
    return 1;
}

int vt_record_find_library(const char *exe, const char *override, char *out, size_t outlen,
                           char *tried, size_t triedlen)
{
    static const char *const rel[] = {
        "../lib/libvramtrace.so",       /* installed: PREFIX/bin -> PREFIX/lib */
        "../lib64/libvramtrace.so",
        "libvramtrace.so",              /* build tree: binary and library side by side */
        "src/inject/libvramtrace.so",   /* build/vramtrace, build/src/inject/ */
        "../inject/libvramtrace.so",    /* build/src/cli/vramtrace */
        "../../libvramtrace.so",        /* build/src/cli/vramtrace, build/libvramtrace.so */
        "../../src/inject/libvramtrace.so",
    };
    if (tried && triedlen)
        tried[0] = 0;
    if (override && *override)
        return try_candidate(override, out, outlen, tried, triedlen) ? 0 : VT_ERR_NOT_FOUND;
    if (!exe || !*exe)
        return VT_ERR_NOT_FOUND;

    char dir[PATH_MAX];
    const char *slash = strrchr(exe, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == exe)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - exe), exe);

    for (size_t k = 0; k < sizeof(rel) / sizeof(rel[0]); k++) {
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof(cand), "%s/%s", dir, rel[k]) >= (int)sizeof(cand))
            continue;
        if (try_candidate(cand, out, outlen, tried, triedlen))
            return 0;
    }
    return VT_ERR_NOT_FOUND;
}

/* ---- names ---------------------------------------------------------------- */

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

static int is_python(const char *prog)
{
    /* python, python3, python3.12, pypy3 ... */
    return !strncmp(prog, "python", 6) || !strncmp(prog, "pypy", 4);
}

void vt_record_command_name(char *const *cmd, int ncmd, char *out, size_t outlen)
{
    if (!outlen)
        return;
    out[0] = 0;
    if (ncmd <= 0 || !cmd[0])
        goto fallback;
    const char *name = base_name(cmd[0]);
    size_t nlen = strlen(name);
    if (is_python(name)) {
        /* Skip interpreter options; the first non-option is the script.
         * Options that take a value: -c (a command: keep the interpreter),
         * -m MOD, -W ARG, -X OPT. */
        for (int i = 1; i < ncmd; i++) {
            const char *a = cmd[i];
            if (!strcmp(a, "-m") && i + 1 < ncmd) {
                name = cmd[i + 1];
                nlen = strlen(name);
                break;
            }
            if (!strcmp(a, "-c") || !strcmp(a, "-"))
                break;
            if (!strcmp(a, "-W") || !strcmp(a, "-X")) {
                i++;
                continue;
            }
            if (a[0] == '-')
                continue;
            name = base_name(a);
            nlen = strlen(name);
            if (nlen > 3 && !strcmp(name + nlen - 3, ".py"))
                nlen -= 3;
            break;
        }
    }
    size_t o = 0;
    for (size_t i = 0; i < nlen && o + 1 < outlen && o < 64; i++) {
        unsigned char c = (unsigned char)name[i];
        out[o++] = (isalnum(c) || c == '.' || c == '_' || c == '-') ? (char)c : '_';
    }
    out[o] = 0;
    /* A name of dots only ("." or "..") would be a path component. */
    if (o && strspn(out, ".") != o)
        return;
fallback:
    snprintf(out, outlen, "cmd");
}

int vt_record_default_dir(const char *name, time_t t, char *out, size_t outlen)
{
    struct tm tm;
    if (!localtime_r(&t, &tm))
        return VT_ERR_INVALID;
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    int n = snprintf(out, outlen, "vramtrace-%s-%s", name, stamp);
    return (n < 0 || (size_t)n >= outlen) ? VT_ERR_INVALID : 0;
}

int vt_record_is_trace_name(const char *name)
{
    size_t n = strlen(name), pl = strlen(VT_RECORD_FILE_PREFIX),
           sl = strlen(VT_RECORD_FILE_SUFFIX);
    return n > pl + sl && !strncmp(name, VT_RECORD_FILE_PREFIX, pl) &&
           !strcmp(name + n - sl, VT_RECORD_FILE_SUFFIX);
}

/* ---- the environment plan ------------------------------------------------ */

static int plan_set(vt_record_plan *p, const char *name, const char *value)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->vars[i].name, name)) {
            char *v = strdup(value);
            if (!v)
                return VT_ERR_NOMEM;
            free(p->vars[i].value);
            p->vars[i].value = v;
            return 0;
        }
    if (p->n >= VT_RECORD_MAX_VARS)
        return VT_ERR_INVALID;
    char *v = strdup(value);
    if (!v)
        return VT_ERR_NOMEM;
    p->vars[p->n].name = name;
    p->vars[p->n].value = v;
    p->n++;
    return 0;
}

static int plan_switch(vt_record_plan *p, const char *name, int v)
{
    return v < 0 ? 0 : plan_set(p, name, v ? "1" : "0");
}

static int plan_int(vt_record_plan *p, const char *name, int v)
{
    char buf[16];
    if (v < 0)
        return 0;
    snprintf(buf, sizeof(buf), "%d", v);
    return plan_set(p, name, buf);
}

/* Merge --tensors into one allocator variable and add it to the plan;
 * `say` = 0 keeps its warnings quiet (already said for the same value). */
static int plan_alloc_conf(vt_record_plan *p, const char *var, const char *user, int say)
{
    char *merged = NULL;
    char warn[512];
    int rc = vt_record_merge_alloc_conf(var, user, &merged, warn, sizeof(warn));
    if (rc)
        return rc;
    if (warn[0] && say)
        add_warning(p->warn, sizeof(p->warn), "%s", warn);
    rc = plan_set(p, var, merged);
    free(merged);
    return rc;
}

int vt_record_plan_env(vt_record_plan *p, const vt_record_opts *o, const char *lib,
                       const char *outdir, const char *(*getenv_fn)(const char *))
{
    int rc;
    memset(p, 0, sizeof(*p));

    const char *prev = getenv_fn("CUDA_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, lib))
        add_warning(p->warn, sizeof(p->warn),
                    "CUDA_INJECTION64_PATH was '%s' (another tool?); replaced by vramtrace's",
                    prev);
    if ((rc = plan_set(p, "CUDA_INJECTION64_PATH", lib)))
        return rc;

    char tmpl[PATH_MAX + 64];
    if (snprintf(tmpl, sizeof(tmpl), "%s/%s", outdir, VT_RECORD_FILE_TEMPLATE) >=
        (int)sizeof(tmpl))
        return VT_ERR_INVALID;
    if ((rc = plan_set(p, VT_ENV_OUTPUT, tmpl)))
        return rc;
    if ((rc = plan_switch(p, VT_ENV_KERNELS, o->kernels)) ||
        (rc = o->native_stacks == 2 ? plan_set(p, VT_ENV_NATIVE_STACKS, "full")
                                    : plan_switch(p, VT_ENV_NATIVE_STACKS, o->native_stacks)) ||
        (rc = plan_switch(p, VT_ENV_PYTHON_STACKS, o->python_stacks)) ||
        (rc = plan_int(p, VT_ENV_STACK_DEPTH, o->stack_depth)) ||
        (rc = plan_switch(p, VT_ENV_STATIC, o->static_mem)) ||
        (rc = plan_int(p, VT_ENV_FLUSH_MS, o->flush_ms)) ||
        (rc = plan_int(p, VT_ENV_SAMPLE_MS, o->sample_ms)))
        return rc;
    if (o->quiet && (rc = plan_set(p, VT_ENV_QUIET, "1")))
        return rc;
    if (o->clock && (rc = plan_set(p, VT_ENV_CLOCK, o->clock)))
        return rc;

    if (o->tensors) {
        /* PyTorch >= 2.9 reads PYTORCH_ALLOC_CONF first and falls back to
         * the older PYTORCH_CUDA_ALLOC_CONF (with a deprecation warning);
         * older versions read only the latter.  Set both, each merged with
         * what that version would have read, so every version gets the
         * user's keys plus the backend. */
        const char *cuda = getenv_fn("PYTORCH_CUDA_ALLOC_CONF");
        const char *generic = getenv_fn("PYTORCH_ALLOC_CONF");
        if ((rc = plan_alloc_conf(p, "PYTORCH_CUDA_ALLOC_CONF", cuda, 1)))
            return rc;
        if ((rc = plan_alloc_conf(p, "PYTORCH_ALLOC_CONF", generic ? generic : cuda,
                                  generic != NULL)))
            return rc;
        const char *nocache = getenv_fn("PYTORCH_NO_CUDA_MEMORY_CACHING");
        if (nocache && *nocache && strcmp(nocache, "0"))
            add_warning(p->warn, sizeof(p->warn),
                        "PYTORCH_NO_CUDA_MEMORY_CACHING=%s is set: PyTorch then calls "
                        "cudaMalloc per tensor and ignores --tensors' backend",
                        nocache);
    }
    return 0;
}

const char *vt_record_plan_get(const vt_record_plan *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->vars[i].name, name))
            return p->vars[i].value;
    return NULL;
}

void vt_record_plan_free(vt_record_plan *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        free(p->vars[i].value);
    p->n = 0;
}

int vt_record_exit_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

int vt_record_pytest_plugins(const char *old, char *out, size_t outlen)
{
    const size_t nm = strlen(VT_RECORD_PYTEST_PLUGIN);
    int have = 0;
    for (const char *p = old && *old ? old : ""; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        have |= n == nm && !strncmp(p, VT_RECORD_PYTEST_PLUGIN, nm);
        if (!e)
            break;
        p = e + 1;
    }
    int w = have || !old || !*old ? snprintf(out, outlen, "%s", have ? old : VT_RECORD_PYTEST_PLUGIN)
                                  : snprintf(out, outlen, "%s,%s", old, VT_RECORD_PYTEST_PLUGIN);
    return w < 0 || (size_t)w >= outlen ? VT_ERR_INVALID : 0;
}
