/* vt_actmux.c - CUPTI's activity API shared with a second client
 * (vt_actmux.h).  One mutex guards the kinds and the set of guest
 * buffers in flight; the guest's callbacks are called outside it. */
#include "vt_actmux.h"

#include <pthread.h>
#include <string.h>

static struct {
    pthread_mutex_t mu;
    vt_actmux_real real;
    vt_actmux_req_fn req;
    vt_actmux_done_fn done;
    uint64_t guest[VT_ACTMUX_MAX_KIND / 64], ours[VT_ACTMUX_MAX_KIND / 64];
    int guest_kinds;  /* kinds the guest has on, counted */
    int guest_other;  /* of those, kinds past VT_ACTMUX_MAX_KIND */
    const uint8_t *owned[VT_ACTMUX_MAX_OWNED];
    int nowned;
    void *cb_ud;
    uint64_t cb_guest[VT_ACTMUX_DOMAINS][VT_ACTMUX_CBIDS / 64]; /* ids the guest has on */
    uint64_t cb_ours[VT_ACTMUX_DOMAINS][VT_ACTMUX_CBIDS / 64];  /* of those, on for vramtrace before */
    vt_actmux_stats st;
} m = {.mu = PTHREAD_MUTEX_INITIALIZER};

static char fake_sub;
void *const vt_actmux_sub = &fake_sub;
vt_actmux_cb_fn vt_actmux_guest_cb;

void vt_actmux_init(const vt_actmux_real *real)
{
    pthread_mutex_lock(&m.mu);
    m.real = *real;
    pthread_mutex_unlock(&m.mu);
}

static int bit(const uint64_t *set, int kind)
{
    return kind >= 0 && kind < VT_ACTMUX_MAX_KIND && (set[kind / 64] >> (kind % 64) & 1);
}

static void set_bit(uint64_t *set, int kind, int on)
{
    if (kind < 0 || kind >= VT_ACTMUX_MAX_KIND)
        return;
    if (on)
        set[kind / 64] |= 1ull << (kind % 64);
    else
        set[kind / 64] &= ~(1ull << (kind % 64));
}

void vt_actmux_keep(int kind, int on)
{
    pthread_mutex_lock(&m.mu);
    set_bit(m.ours, kind, on);
    pthread_mutex_unlock(&m.mu);
}

int vt_actmux_register(vt_actmux_req_fn req, vt_actmux_done_fn done)
{
    pthread_mutex_lock(&m.mu);
    __atomic_store_n(&m.req, req, __ATOMIC_RELEASE);
    __atomic_store_n(&m.done, done, __ATOMIC_RELEASE);
    m.st.registered = req && done;
    pthread_mutex_unlock(&m.mu);
    return 0;
}

int vt_actmux_enable(int kind)
{
    pthread_mutex_lock(&m.mu);
    int first = m.guest_kinds == 0;
    if (kind >= VT_ACTMUX_MAX_KIND) {
        m.guest_other++;
        m.guest_kinds++;
    } else if (kind >= 0 && !bit(m.guest, kind)) {
        set_bit(m.guest, kind, 1);
        m.guest_kinds++;
    }
    vt_actmux_real r = m.real;
    pthread_mutex_unlock(&m.mu);
    /* the buffers in flight are ours: end them, so that the guest's
     * records from now on land in buffers it gave */
    if (first && r.flush)
        r.flush(r.flush_forced);
    return r.enable ? r.enable(kind) : 0;
}

int vt_actmux_disable(int kind)
{
    pthread_mutex_lock(&m.mu);
    if (kind >= VT_ACTMUX_MAX_KIND) {
        if (m.guest_other) {
            m.guest_other--;
            m.guest_kinds--;
        }
    } else if (bit(m.guest, kind)) {
        set_bit(m.guest, kind, 0);
        m.guest_kinds--;
    }
    int keep = bit(m.ours, kind);
    if (keep)
        m.st.kept_on++;
    vt_actmux_real r = m.real;
    pthread_mutex_unlock(&m.mu);
    if (keep)
        return 0; /* vramtrace still records it: stays on in CUPTI */
    return r.disable ? r.disable(kind) : 0;
}

int vt_actmux_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    pthread_mutex_lock(&m.mu);
    vt_actmux_req_fn req = m.req;
    int want = req && m.done && m.guest_kinds > 0;
    if (want && m.nowned == VT_ACTMUX_MAX_OWNED) {
        m.st.set_full++;
        want = 0;
    }
    pthread_mutex_unlock(&m.mu);
    if (!want)
        return 0;
    uint8_t *b = NULL;
    size_t sz = 0, mx = 0;
    req(&b, &sz, &mx); /* the guest's own locks; not under ours */
    if (!b || !sz)
        return 0; /* it refused (stopped collecting): one of ours */
    pthread_mutex_lock(&m.mu);
    int kept = m.nowned < VT_ACTMUX_MAX_OWNED;
    if (kept) {
        m.owned[m.nowned++] = b;
        m.st.guest_bufs++;
    } else {
        m.st.set_full++;
    }
    vt_actmux_done_fn done = m.done;
    pthread_mutex_unlock(&m.mu);
    if (!kept) { /* filled meanwhile: hand it back empty */
        if (done)
            done(NULL, 0, b, sz, 0);
        return 0;
    }
    *buf = b;
    *size = sz;
    *max_records = mx;
    return 1;
}

int vt_actmux_take(const uint8_t *buf)
{
    int found = 0;
    pthread_mutex_lock(&m.mu);
    for (int i = 0; i < m.nowned; i++)
        if (m.owned[i] == buf) {
            m.owned[i] = m.owned[--m.nowned];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&m.mu);
    return found;
}

void vt_actmux_give(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    vt_actmux_done_fn done = __atomic_load_n(&m.done, __ATOMIC_ACQUIRE);
    if (done)
        done(ctx, stream, buf, size, valid);
}

void vt_actmux_get_stats(vt_actmux_stats *st)
{
    pthread_mutex_lock(&m.mu);
    *st = m.st;
    pthread_mutex_unlock(&m.mu);
}

/* ---- callbacks ---------------------------------------------------------- */

static int cb_valid(int domain, uint32_t cbid)
{
    return domain > 0 && domain < VT_ACTMUX_DOMAINS && cbid < VT_ACTMUX_CBIDS;
}

int vt_actmux_subscribe(vt_actmux_cb_fn fn, void *ud)
{
    pthread_mutex_lock(&m.mu);
    int busy = m.st.subscribed;
    if (!busy) {
        m.cb_ud = ud;
        memset(m.cb_guest, 0, sizeof(m.cb_guest));
        memset(m.cb_ours, 0, sizeof(m.cb_ours));
        m.st.subscribed = 1;
        __atomic_store_n(&vt_actmux_guest_cb, fn, __ATOMIC_RELEASE);
    }
    int rc = busy ? m.real.busy : 0;
    pthread_mutex_unlock(&m.mu);
    return rc;
}

/* under m.mu: the guest turns one id on or off */
static int cb_set(uint32_t on, int domain, uint32_t cbid)
{
    uint64_t bitv = 1ull << (cbid % 64);
    uint64_t *gw = &m.cb_guest[domain][cbid / 64], *ow = &m.cb_ours[domain][cbid / 64];
    if (on) {
        if (*gw & bitv)
            return 0;
        uint32_t was = 0;
        if (m.real.get_cb && m.real.get_cb(&was, domain, cbid) == 0 && was)
            *ow |= bitv;
        *gw |= bitv;
        return was || !m.real.enable_cb ? 0 : m.real.enable_cb(1, domain, cbid);
    }
    if (!(*gw & bitv))
        return 0;
    *gw &= ~bitv;
    int ours = (*ow & bitv) != 0;
    *ow &= ~bitv;
    return ours || !m.real.enable_cb ? 0 : m.real.enable_cb(0, domain, cbid);
}

int vt_actmux_enable_callback(uint32_t on, int domain, uint32_t cbid)
{
    if (!cb_valid(domain, cbid))
        return m.real.enable_cb ? m.real.enable_cb(on, domain, cbid) : 0;
    pthread_mutex_lock(&m.mu);
    int rc = cb_set(on, domain, cbid);
    pthread_mutex_unlock(&m.mu);
    return rc;
}

int vt_actmux_enable_domain(uint32_t on, int domain)
{
    if (!cb_valid(domain, 0))
        return 0;
    pthread_mutex_lock(&m.mu);
    uint32_t n = m.real.ncbid[domain] < VT_ACTMUX_CBIDS ? m.real.ncbid[domain] : VT_ACTMUX_CBIDS;
    int rc = 0;
    for (uint32_t c = 1; c < n; c++) { /* id 0 is INVALID in every domain */
        int r = cb_set(on, domain, c);
        if (r && !rc)
            rc = r;
    }
    pthread_mutex_unlock(&m.mu);
    return rc;
}

int vt_actmux_get_callback(uint32_t *on, int domain, uint32_t cbid)
{
    pthread_mutex_lock(&m.mu);
    *on = cb_valid(domain, cbid) && (m.cb_guest[domain][cbid / 64] >> (cbid % 64) & 1);
    pthread_mutex_unlock(&m.mu);
    return 0;
}

int vt_actmux_unsubscribe(void)
{
    pthread_mutex_lock(&m.mu);
    __atomic_store_n(&vt_actmux_guest_cb, NULL, __ATOMIC_RELEASE);
    for (int d = 1; d < VT_ACTMUX_DOMAINS; d++)
        for (uint32_t c = 1; c < VT_ACTMUX_CBIDS; c++)
            if (m.cb_guest[d][c / 64] >> (c % 64) & 1)
                cb_set(0, d, c);
    m.st.subscribed = 0;
    pthread_mutex_unlock(&m.mu);
    return 0;
}

void vt_actmux_dispatch(int domain, uint32_t cbid, const void *data)
{
    vt_actmux_cb_fn fn = __atomic_load_n(&vt_actmux_guest_cb, __ATOMIC_ACQUIRE);
    if (!fn || !cb_valid(domain, cbid))
        return;
    /* the bitmap is read without the lock: a word's load is atomic, and an
     * id turned on or off meanwhile may miss or get one callback */
    if (!(__atomic_load_n(&m.cb_guest[domain][cbid / 64], __ATOMIC_RELAXED) >> (cbid % 64) & 1))
        return;
    __atomic_fetch_add(&m.st.callbacks, 1, __ATOMIC_RELAXED);
    fn(m.cb_ud, domain, cbid, data);
}
