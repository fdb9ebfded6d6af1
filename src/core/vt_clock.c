/* vt_clock.c - the producers' clock: calibrated TSC, or CLOCK_MONOTONIC.
 * See vt_clock.h.  The TSC map is a segment {tsc_base, ns_base, mult}
 * (ns = ns_base + (tsc - tsc_base) * mult / 2^32) published under a
 * seqlock; vt_clock_tick() replaces it with one that starts where the old
 * one ends (continuity) and whose slope is the long-run rate corrected by
 * the current error over a one-second horizon, clamped to 0.1 %. */
#define _GNU_SOURCE
#include "vt_clock.h"
#include "vt_hot.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#define VT_HAVE_TSC 1
#else
#define VT_HAVE_TSC 0
#endif

#define VT_CAL_NS 2000000ull         /* initial calibration window */
#define VT_SLEW_HORIZON_NS 1000000000 /* errors are slewed out over about this */
#define VT_SLEW_MAX_PPM 1000          /* at most 0.1 % rate change */
#define VT_RESET_NS 50000000          /* beyond this the map jumps instead */

static struct {
    _Atomic uint32_t seq;
    _Atomic uint64_t tsc_base, ns_base, mult; /* mult: ns per tick, 32.32 fixed */
    _Atomic int src;
    uint64_t a_tsc, a_ns; /* anchor of the long-run rate */
    vt_clock_stats st;
} c __attribute__((aligned(64))); /* what vt_clock_now() reads: one line */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if VT_HAVE_TSC
static inline uint64_t tsc_read(void) { return __rdtsc(); }

/* A (tsc, monotonic ns) pair read as close together as we can. */
static void pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = tsc_read();
        uint64_t n = mono_ns();
        uint64_t b = tsc_read();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

int vt_clock_kernel_source(char *buf, size_t len)
{
    if (!buf || len == 0)
        return -1;
    buf[0] = 0;
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) {
        buf[0] = 0;
        return -1;
    }
    buf[n] = 0;
    if (buf[n - 1] == '\n')
        buf[n - 1] = 0;
    return 0;
}

/* The kernel's own choice of clocksource: "tsc" means it found the TSC
 * constant, non-stop and synchronized across CPUs (and keeps watching it).
 * The CPUID invariant bit alone says nothing of sockets or hypervisors, and
 * where the kernel chose another source (kvm-clock, hpet), CLOCK_MONOTONIC
 * is what to follow anyway. */
static int tsc_usable(void)
{
    char buf[32];
    return vt_clock_kernel_source(buf, sizeof(buf)) == 0 && strcmp(buf, "tsc") == 0;
}

static void publish(uint64_t tsc_base, uint64_t ns_base, uint64_t mult)
{
    uint32_t s = atomic_load_explicit(&c.seq, memory_order_relaxed);
    atomic_store_explicit(&c.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&c.tsc_base, tsc_base, memory_order_relaxed);
    atomic_store_explicit(&c.ns_base, ns_base, memory_order_relaxed);
    atomic_store_explicit(&c.mult, mult, memory_order_relaxed);
    atomic_store_explicit(&c.seq, s + 2, memory_order_release);
}

/* Replace the map by one of slope `mult` that starts where the old one
 * (tb, nb, m) is at this moment: the base TSC is read inside the write
 * section (after seq is odd and a full barrier), so a reader whose own TSC
 * read lay in a validated read section (vt_clock_now) read it before the
 * base, with the old map (its value at most the new base), or after the
 * publication, with the new one (at least the base): time never goes back
 * on a thread, however long a reader is preempted. */
static void publish_here(uint64_t tb, uint64_t nb, uint64_t m, uint64_t mult)
{
    uint32_t s = atomic_load_explicit(&c.seq, memory_order_relaxed);
    /* a locked exchange (a full barrier, which TSan models; a seq_cst
     * fence it does not), then lfence: the TSC is read after seq is odd
     * for every other core */
    atomic_exchange_explicit(&c.seq, s + 1, memory_order_seq_cst);
    _mm_lfence();
    uint64_t t = tsc_read();
    uint64_t d = t > tb ? t - tb : 0;
    uint64_t n = nb + (uint64_t)(((unsigned __int128)d * m) >> 32);
    atomic_store_explicit(&c.tsc_base, t, memory_order_relaxed);
    atomic_store_explicit(&c.ns_base, n, memory_order_relaxed);
    atomic_store_explicit(&c.mult, mult, memory_order_relaxed);
    atomic_store_explicit(&c.seq, s + 2, memory_order_release);
}

/* The current map and a TSC value read inside the same validated read
 * section (see publish_here): 0 as snapshot(). */
static inline __attribute__((always_inline)) int snapshot_tsc(uint64_t *x, uint64_t *tb, uint64_t *nb, uint64_t *m)
{
    for (int i = 0; i < 64; i++) {
        uint32_t s = atomic_load_explicit(&c.seq, memory_order_acquire);
        *tb = atomic_load_explicit(&c.tsc_base, memory_order_acquire);
        *nb = atomic_load_explicit(&c.ns_base, memory_order_acquire);
        *m = atomic_load_explicit(&c.mult, memory_order_acquire);
        unsigned aux;
        *x = __rdtscp(&aux); /* after the loads above */
        _mm_lfence();        /* before the check below */
        if (!(s & 1) && atomic_load_explicit(&c.seq, memory_order_acquire) == s)
            return 1;
    }
    return 0;
}

/* The current map, read under the sequence lock: 0 when no consistent
 * copy was had in 64 tries (a tick interrupted on this very thread, e.g.
 * a signal handler calling us, would leave seq odd for good). */
static inline __attribute__((always_inline)) int snapshot(uint64_t *tb, uint64_t *nb, uint64_t *m)
{
    for (int i = 0; i < 64; i++) {
        uint32_t s = atomic_load_explicit(&c.seq, memory_order_acquire);
        /* acquire: the second read of seq cannot come before them (what a
         * fence after relaxed loads would do; TSan does not model fences) */
        *tb = atomic_load_explicit(&c.tsc_base, memory_order_acquire);
        *nb = atomic_load_explicit(&c.ns_base, memory_order_acquire);
        *m = atomic_load_explicit(&c.mult, memory_order_acquire);
        if (!(s & 1) && atomic_load_explicit(&c.seq, memory_order_relaxed) == s)
            return 1;
    }
    return 0;
}

static inline uint64_t map(uint64_t tsc, uint64_t tb, uint64_t nb, uint64_t m)
{
    __int128 d = (__int128)(int64_t)(tsc - tb) * (__int128)m;
    return nb + (uint64_t)(int64_t)(d >> 32);
}
#endif

vt_clocksrc vt_clock_init(int want_tsc)
{
    atomic_store(&c.src, 0);
    memset(&c.st, 0, sizeof(c.st));
#if VT_HAVE_TSC
    if (want_tsc && tsc_usable()) {
        uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
        pair(&t0, &n0);
        do
            pair(&t1, &n1);
        while (n1 - n0 < VT_CAL_NS);
        if (t1 > t0) {
            uint64_t mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
            /* a TSC between 100 MHz and 20 GHz, or not a TSC we understand */
            if (mult > (1ull << 32) / 20 && mult < (1ull << 32) * 10) {
                c.a_tsc = t0;
                c.a_ns = n0;
                c.st.tsc_khz = (uint64_t)(((unsigned __int128)1000000 << 32) / mult);
                publish(t1, n1, mult);
                atomic_store(&c.src, VT_CLOCKSRC_TSC);
                return VT_CLOCKSRC_TSC;
            }
        }
    }
#else
    (void)want_tsc;
#endif
    atomic_store(&c.src, VT_CLOCKSRC_MONOTONIC);
    return VT_CLOCKSRC_MONOTONIC;
}

VT_HOT uint64_t vt_clock_at(uint64_t tsc)
{
#if VT_HAVE_TSC
    uint64_t tb, nb, m;
    if (atomic_load_explicit(&c.src, memory_order_relaxed) == VT_CLOCKSRC_TSC && snapshot(&tb, &nb, &m))
        return map(tsc, tb, nb, m);
#else
    (void)tsc;
#endif
    return 0;
}

/* The TSC is read inside the map's validated read section (snapshot_tsc,
 * publish_here): two reads on one thread never go back, even when the map
 * is republished between them with another rate and the reader is
 * preempted between its loads and its TSC read (it then reads again).
 * (vt_clock_at() maps a value read earlier back from the base at the new
 * rate: off by the slew at most, 0.1 % of the value's age.) */
VT_HOT uint64_t vt_clock_now(void)
{
#if VT_HAVE_TSC
    uint64_t x, tb, nb, m;
    if (atomic_load_explicit(&c.src, memory_order_relaxed) == VT_CLOCKSRC_TSC && snapshot_tsc(&x, &tb, &nb, &m))
        return map(x, tb, nb, m);
#endif
    return mono_ns();
}

void vt_clock_tick(void)
{
#if VT_HAVE_TSC
    if (atomic_load_explicit(&c.src, memory_order_relaxed) != VT_CLOCKSRC_TSC)
        return;
    uint64_t t = 0, n = 0;
    pair(&t, &n);
    uint64_t tb = atomic_load_explicit(&c.tsc_base, memory_order_relaxed);
    uint64_t nb = atomic_load_explicit(&c.ns_base, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&c.mult, memory_order_relaxed);
    if (t <= tb)
        return;
    uint64_t mapped = map(t, tb, nb, m);
    int64_t err = (int64_t)(n - mapped);
    c.st.ticks++;
    c.st.last_error_ns = err;
    if (err > VT_RESET_NS || err < -VT_RESET_NS) {
        /* suspended, migrated, or the TSC is not what it claimed: start over
         * from here (the one place time may step) */
        c.a_tsc = t;
        c.a_ns = n;
        c.st.resets++;
        publish(t, n, m);
        return;
    }
    uint64_t lr = m;
    if (t - c.a_tsc > 1000000 && n > c.a_ns)
        lr = (uint64_t)(((unsigned __int128)(n - c.a_ns) << 32) / (t - c.a_tsc));
    int64_t ppm = err * 1000000 / VT_SLEW_HORIZON_NS;
    if (ppm > VT_SLEW_MAX_PPM)
        ppm = VT_SLEW_MAX_PPM;
    if (ppm < -VT_SLEW_MAX_PPM)
        ppm = -VT_SLEW_MAX_PPM;
    uint64_t nm = (uint64_t)((__int128)lr + (__int128)lr * ppm / 1000000);
    c.st.tsc_khz = (uint64_t)(((unsigned __int128)1000000 << 32) / lr);
    publish_here(tb, nb, m, nm);
#endif
}

vt_clocksrc vt_clock_source(void)
{
    int s = atomic_load_explicit(&c.src, memory_order_relaxed);
    return s ? (vt_clocksrc)s : VT_CLOCKSRC_MONOTONIC;
}

const char *vt_clock_name(vt_clocksrc src)
{
    return src == VT_CLOCKSRC_TSC ? "tsc" : "monotonic";
}

void vt_clock_get_stats(vt_clock_stats *st)
{
    *st = c.st;
}
