/* fuzz_input.h - the input of a fuzz target as a file: the bytes written
 * to one memfd (no disk, no directory), named by its /proc/self/fd path,
 * and /dev/null for what the target prints; and the tmpfs directory for
 * the files a target must name.  The including file defines _GNU_SOURCE
 * before any include (memfd_create). */
#ifndef VT_FUZZ_INPUT_H
#define VT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* the path of a file holding data[0, size); *null: an open /dev/null */
static inline const char *fuzz_input_file(const uint8_t *data, size_t size, FILE **null)
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

/* /dev/shm if it is a writable directory, else /tmp: on a disk, the
 * journal and writeback cost more than the target itself */
static inline const char *fuzz_tmpfs(void)
{
    struct stat st;
    return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

#endif
