/* vt_inject_nvtx.c - NVTX ranges and marks (the NVTX domain). */
#include "vt_inject_int.h"
/* ----------------------------------------------------------------- NVTX */

static const char *nvtx_domain_name(nvtxDomainHandle_t h)
{
    if (!h)
        return NULL;
    for (int i = 0; i < VT_MAX_NVTX_DOMAINS; i++)
        if (atomic_load_explicit(&g.nvtx_dom[i], memory_order_acquire) == (void *)h)
            return g.nvtx_dom_name[i];
    return NULL;
}

static const char *nvtx_attr_message(const nvtxEventAttributes_t *a)
{
    if (!a || a->messageType != NVTX_MESSAGE_TYPE_ASCII)
        return NULL;
    return a->message.ascii;
}

static void emit_nvtx(vt_nvtxop op, const char *msg, const char *dom, uint64_t range_id)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = msg;
    ev.u.nvtx.domain = dom;
    ev.u.nvtx.range_id = range_id;
    vt_inject_emit(&ev);
}

void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd)
{
    const void *pp = nd->functionParams;
    uint64_t rid = nd->functionReturnValue ? *(const nvtxRangeId_t *)nd->functionReturnValue : 0;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: emit_nvtx(VT_NVTX_PUSH, ((const nvtxRangePushA_params *)pp)->message, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        emit_nvtx(VT_NVTX_PUSH, nvtx_attr_message(((const nvtxRangePushEx_params *)pp)->eventAttrib), NULL, 0);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop: emit_nvtx(VT_NVTX_POP, NULL, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA: emit_nvtx(VT_NVTX_START, ((const nvtxRangeStartA_params *)pp)->message, NULL, rid); break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        emit_nvtx(VT_NVTX_START, nvtx_attr_message(((const nvtxRangeStartEx_params *)pp)->eventAttrib), NULL, rid);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd: emit_nvtx(VT_NVTX_END, NULL, NULL, ((const nvtxRangeEnd_params *)pp)->id); break;
    case CUPTI_CBID_NVTX_nvtxMarkA: emit_nvtx(VT_NVTX_MARK, ((const nvtxMarkA_params *)pp)->message, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxMarkEx: emit_nvtx(VT_NVTX_MARK, nvtx_attr_message(((const nvtxMarkEx_params *)pp)->eventAttrib), NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
        const nvtxDomainCreateA_params *p = pp;
        nvtxDomainHandle_t h = nd->functionReturnValue ? *(const nvtxDomainHandle_t *)nd->functionReturnValue : NULL;
        if (!h || !p->name)
            break;
        for (int i = 0; i < VT_MAX_NVTX_DOMAINS; i++) {
            void *z = NULL;
            if (atomic_load(&g.nvtx_dom[i]) == NULL) {
                snprintf(g.nvtx_dom_name[i], sizeof(g.nvtx_dom_name[i]), "%s", p->name);
                if (atomic_compare_exchange_strong(&g.nvtx_dom[i], &z, (void *)h))
                    break;
            }
        }
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const nvtxDomainRangePushEx_params *p = pp;
        emit_nvtx(VT_NVTX_PUSH, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), 0);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
        const nvtxDomainRangePop_params *p = pp;
        emit_nvtx(VT_NVTX_POP, NULL, nvtx_domain_name(p->domain), 0);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const nvtxDomainRangeStartEx_params *p = pp;
        emit_nvtx(VT_NVTX_START, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), rid);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
        const nvtxDomainRangeEnd_params *p = pp;
        emit_nvtx(VT_NVTX_END, NULL, nvtx_domain_name(p->domain), p->core.id);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
        const nvtxDomainMarkEx_params *p = pp;
        emit_nvtx(VT_NVTX_MARK, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), 0);
        break;
    }
    default:
        break;
    }
}
