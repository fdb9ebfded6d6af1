/* vt_hot.h - helpers for the traced program's own path (VT_HOT, VT_TLS_ADDR).
 * VT_HOT marks the functions on that path:
 * a driver callback down to the producer ring (src/inject's callback,
 * stack capture and emit helpers; the writer's producer side; the clock).
 * They run after microseconds of the host's own work, when little of
 * their code is still cached, so they are placed together in one section
 * (.text.hot.*, which the linker gathers ahead of the rest of .text): the
 * few code lines a callback runs lie on a page or two and next to each
 * other instead of spread over the library.  Placement only: the
 * compiler's optimisation is unchanged (unlike __attribute__((hot))). */
#ifndef VT_HOT_H
#define VT_HOT_H

#if defined(__GNUC__) && defined(__ELF__)
#define VT_HOT __attribute__((section(".text.hot.vramtrace")))
#else
#define VT_HOT
#endif

/* The address of a thread-local object, computed once.  In a shared
 * object loaded at run time every access to a __thread variable is a
 * __tls_get_addr call, and GCC calls it again rather than keep the address
 * in a register (even in every iteration of a loop).  Take the address with
 * this once per function, into a local; the asm hides where it came from. */
#define VT_TLS_ADDR(p)                                                                                       \
    __extension__({                                                                                          \
        __typeof__(p) vt_tls_addr_ = (p);                                                                    \
        __asm__("" : "+r"(vt_tls_addr_));                                                                    \
        vt_tls_addr_;                                                                                        \
    })

#endif
