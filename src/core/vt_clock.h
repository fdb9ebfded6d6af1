/* vt_clock.h - a cheap process-wide nanosecond clock for event producers.
 *
 * Every allocation event in a traced process needs a timestamp, and on a
 * cloud VM clock_gettime() may cost hundreds of nanoseconds (a syscall when
 * the kernel does not trust the TSC for its vDSO), which a tensor-level
 * allocator pays twice per tensor.  Where the kernel uses the TSC, this is one
 * rdtsc and a multiply: it follows CLOCK_MONOTONIC through a linear map
 * (tsc -> ns) that vt_clock_tick() recalibrates against CLOCK_MONOTONIC,
 * slewing out any error at most 0.1 % per unit time, so that it stays
 * monotonic and within microseconds of CLOCK_MONOTONIC.  Elsewhere it is
 * clock_gettime(CLOCK_MONOTONIC).
 *
 * Process-wide state; vt_clock_now() is thread-safe, lock-free and
 * async-signal-safe.  vt_clock_init() and vt_clock_tick() are called from
 * one thread at a time (init once, then ticks from one background thread).
 */
#ifndef VT_CLOCK_H
#define VT_CLOCK_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    VT_CLOCKSRC_MONOTONIC = 1, /* clock_gettime(CLOCK_MONOTONIC) */
    VT_CLOCKSRC_TSC = 2,       /* rdtsc, calibrated against CLOCK_MONOTONIC */
} vt_clocksrc;

/* Choose and calibrate the source.  want_tsc: 1 use the TSC when the
 * kernel's own clocksource is "tsc" (it checked the TSC is invariant and
 * synchronized), 0 never.
 * Calibration spins about 2 ms.  Returns the source chosen.  May be called
 * again (e.g. by tests); not concurrently with vt_clock_now(). */
vt_clocksrc vt_clock_init(int want_tsc);

/* Nanoseconds, following CLOCK_MONOTONIC.  Before vt_clock_init():
 * clock_gettime(CLOCK_MONOTONIC). */
uint64_t vt_clock_now(void);

/* The time of a TSC value read earlier on this machine (__rdtsc()), in
 * vt_clock_now()'s nanoseconds; 0 when the clock is not the TSC.  Lets a
 * caller that reads the TSC anyway (to time itself) not read it twice. */
uint64_t vt_clock_at(uint64_t tsc);

/* Recalibrate the TSC map against CLOCK_MONOTONIC; call every 0.1-1 s
 * from one background thread.  Cheap; does nothing for the monotonic source. */
void vt_clock_tick(void);

/* The source in use, and a short name for it ("tsc", "monotonic"). */
vt_clocksrc vt_clock_source(void);
const char *vt_clock_name(vt_clocksrc src);

/* The kernel's current clocksource ("tsc", "kvm-clock", ...) into buf,
 * without the newline.  Returns 0, or -1 (buf "") where sysfs says nothing. */
int vt_clock_kernel_source(char *buf, size_t len);

/* Statistics of the TSC map for tests and notes: the last correction
 * (reference minus mapped, ns) and the TSC rate in kHz. */
typedef struct {
    int64_t last_error_ns;
    uint64_t tsc_khz;
    uint64_t ticks;
    uint64_t resets; /* corrections too large to slew (the map jumped) */
} vt_clock_stats;
void vt_clock_get_stats(vt_clock_stats *st);

#endif
