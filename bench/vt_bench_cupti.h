/* vt_bench_cupti.h - benchmark-only: CUPTI activity attributes from the
 * environment, so that one build can time CUPTI's kernel-activity settings
 * side by side (bench/cupti_floor.c and libvramtrace.so read the same
 * variable; bench/bench_configs.py names the variants):
 *   VT_BENCH_CUPTI_ATTRS="pinned=1,perthread=0,bufsize=BYTES,prealloc=N,poollimit=N"
 * pinned:    CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED (profiling
 *            buffers in pinned host memory instead of device memory)
 * perthread: CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER
 * bufsize:   CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE
 * prealloc:  CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE
 * poollimit: CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT
 * Call before cuptiActivityRegisterCallbacks() and any activity kind is
 * enabled (CUPTI reads them there and at context creation). */
#ifndef VT_BENCH_CUPTI_H
#define VT_BENCH_CUPTI_H

#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Apply SPEC; returns how many attributes were set, or -1 with the first
 * bad item (unknown name, bad value, or CUPTI's refusal) in bad[0..n). */
static inline int vt_bench_cupti_attrs(const char *spec, char *bad, size_t n)
{
    int set = 0;
    while (spec && *spec) {
        size_t len = strcspn(spec, ",");
        char item[64];
        if (len >= sizeof(item))
            len = sizeof(item) - 1;
        memcpy(item, spec, len);
        item[len] = 0;
        spec += strcspn(spec, ",");
        spec += *spec == ',';
        char *eq = strchr(item, '='), *end = NULL;
        unsigned long long v = eq ? strtoull(eq + 1, &end, 0) : 0;
        if (eq)
            *eq = 0;
        static const struct {
            const char *name;
            CUpti_ActivityAttribute attr;
            int byte; /* uint8_t value, else size_t */
        } k[] = {{"pinned", CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1},
                 {"perthread", CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 1},
                 {"bufsize", CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 0},
                 {"prealloc", CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 0},
                 {"poollimit", CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, 0}};
        size_t i = 0;
        while (i < sizeof(k) / sizeof(k[0]) && strcmp(k[i].name, item))
            i++;
        CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
        if (i < sizeof(k) / sizeof(k[0]) && eq && end && end != eq + 1 && !*end) {
            uint8_t b = (uint8_t)(v != 0);
            size_t z = (size_t)v, sz = k[i].byte ? sizeof(b) : sizeof(z);
            r = cuptiActivitySetAttribute(k[i].attr, &sz, k[i].byte ? (void *)&b : (void *)&z);
        }
        if (r != CUPTI_SUCCESS) {
            if (n)
                snprintf(bad, n, "%s", item);
            return -1;
        }
        set++;
    }
    return set;
}

#endif
