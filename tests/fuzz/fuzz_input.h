/* fuzz_input.h - the input of a fuzz target as a file: the bytes written
 * to one memfd (no disk, no directory), named by its /proc/self/fd path,
 * and /dev/null for what the target prints.  For the targets that take a
 * trace by path (fuzz_analyze.c, fuzz_export.c), which define _GNU_SOURCE
 * before any include (memfd_create). */
#ifndef VT_FUZZ_INPUT_H
#define VT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* the path of a file holding data[0, size); *null: an open /dev/null */
static const char *fuzz_input_file(const uint8_t *data, size_t size, FILE **null)
{
    static int fd = -1;
    static FILE *devnull;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("vt-fuzz", 0);
        devnull = fopen("/dev/null", "w");
        if (fd < 0 || !devnull)
            __builtin_trap();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        __builtin_trap();
    *null = devnull;
    return path;
}

#endif
