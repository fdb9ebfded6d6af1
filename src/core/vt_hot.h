/* vt_hot.h - VT_HOT marks the functions on the traced program's own path:
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

#endif
