/* vt_fp.h - 128-bit fingerprints of call stacks (src/inject), for the
 * writer's stack references (vt_site.fp): two independent 64-bit lanes,
 * each a chain of 64x64->128 multiplications folded to 64 bits (the mixing
 * step of wyhash), over the native return addresses and the Python frames
 * (code key, line, flags) of one capture.  Not cryptographic: stacks are
 * not chosen by an adversary, and two different stacks of one thread
 * collide with probability ~2^-128 per pair.  Header only: inlined into
 * the allocation callback and the benchmarks. */
#ifndef VT_FP_H
#define VT_FP_H

#include <stdint.h>

static inline uint64_t vt_fp_mum(uint64_t x, uint64_t y)
{
    __uint128_t m = (__uint128_t)x * y;
    return (uint64_t)m ^ (uint64_t)(m >> 64);
}

typedef struct {
    uint64_t a, b;
} vt_fp;

#define VT_FP_K0 0xa0761d6478bd642full
#define VT_FP_K1 0xe7037ed1a0b428dbull
#define VT_FP_K2 0x8ebc6af09c88c6e3ull
#define VT_FP_K3 0x589965cc75374cc3ull

static inline vt_fp vt_fp_init(uint64_t seed)
{
    vt_fp f = {VT_FP_K0 ^ seed, VT_FP_K2 ^ (seed * VT_FP_K1)};
    return f;
}

/* Mix two words into both lanes. */
static inline void vt_fp_pair(uint64_t *a, uint64_t *b, uint64_t x0, uint64_t x1)
{
    *a = vt_fp_mum(x0 ^ VT_FP_K1, x1 ^ *a);
    *b = vt_fp_mum(x1 ^ VT_FP_K3, x0 ^ *b ^ VT_FP_K2);
}

/* Mix n words (n even is fastest; a last odd word is taken alone). */
static inline void vt_fp_words(vt_fp *f, const uint64_t *w, int n)
{
    uint64_t a = f->a, b = f->b;
    int i = 0;
    for (; i + 1 < n; i += 2)
        vt_fp_pair(&a, &b, w[i], w[i + 1]);
    if (i < n) {
        a = vt_fp_mum(w[i] ^ VT_FP_K1, a ^ VT_FP_K0);
        b = vt_fp_mum(w[i] ^ VT_FP_K3, b ^ VT_FP_K2);
    }
    f->a = a;
    f->b = b;
}

/* The final fingerprint; never {0, 0} (the writer's "none"). */
static inline void vt_fp_final(const vt_fp *f, uint64_t n, uint64_t out[2])
{
    out[0] = vt_fp_mum(f->a ^ VT_FP_K0, n ^ VT_FP_K1);
    out[1] = vt_fp_mum(f->b ^ VT_FP_K2, n ^ VT_FP_K3) | 1;
}

/* The fingerprint of one capture: the native part, then npy Python frames
 * given as 3 words each (vt_pyframe: code key, code address, then line,
 * C-call count and flags in one word; the code address is left out: the
 * key covers it).  The native part is the unwinder's walk id when it has
 * one (vt_unwind_capture_keyed: one id, the same ips), else the return
 * addresses ips[0..n) themselves; the Python part likewise is the Python
 * walk's id when it has one (vt_pystack_capture_walk: one id, the same
 * frames), else the frames; the kinds are told apart.  Equal captures
 * give equal merged stacks. */
static inline void vt_fp_capture(uint64_t walk, const uint64_t *ips, int n, uint64_t pywalk, const uint64_t *py3,
                                 int npy, uint64_t out[2])
{
    vt_fp f = vt_fp_init(((uint64_t)(uint32_t)n << 32) | ((uint64_t)(walk != 0) << 31) |
                         ((uint64_t)(pywalk != 0) << 30) | (uint32_t)npy);
    if (walk) {
        uint64_t w[2] = {walk, (uint64_t)n};
        vt_fp_words(&f, w, 2);
    } else {
        vt_fp_words(&f, ips, n);
    }
    if (pywalk) {
        vt_fp_pair(&f.a, &f.b, pywalk, (uint64_t)npy);
    } else {
        for (int i = 0; i < npy; i++)
            vt_fp_pair(&f.a, &f.b, py3[3 * i], py3[3 * i + 2]);
    }
    vt_fp_final(&f, (uint64_t)n * 1000003u + (uint64_t)npy, out);
}

#endif
