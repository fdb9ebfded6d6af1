/* fake_hook_lib.c - a stand-in for libvramtrace.so's memory-hook entry
 * points (src/inject/vt_inject_hook.c) with the same C signatures: it
 * records each call in globals that tests/inject/test_cupy_hook.py reads
 * through ctypes.  fake_refuse makes vt_hook_attach answer -1 (the library
 * not initialised yet). */
#include <stdint.h>
#include <string.h>

#define FAKE_MAX 256
__attribute__((visibility("default"))) int fake_refuse, fake_attached;
__attribute__((visibility("default"))) char fake_pool[32];
__attribute__((visibility("default"))) uint32_t fake_n;
__attribute__((visibility("default"))) uint32_t fake_action[FAKE_MAX];
__attribute__((visibility("default"))) int32_t fake_dev[FAKE_MAX];
__attribute__((visibility("default"))) uint64_t fake_addr[FAKE_MAX], fake_size[FAKE_MAX];

__attribute__((visibility("default"))) int vt_hook_attach(const char *pool)
{
    if (fake_refuse)
        return -1;
    if (!pool || strcmp(pool, "cupy"))
        return -2;
    strncpy(fake_pool, pool, sizeof(fake_pool) - 1);
    fake_attached++;
    return 0;
}

__attribute__((visibility("default"))) int vt_hook_event(uint32_t action, int32_t device, uint64_t addr,
                                                         uint64_t size)
{
    if (!fake_attached)
        return -1;
    if (fake_n < FAKE_MAX) {
        fake_action[fake_n] = action;
        fake_dev[fake_n] = device;
        fake_addr[fake_n] = addr;
        fake_size[fake_n] = size;
        fake_n++;
    }
    return 0;
}
