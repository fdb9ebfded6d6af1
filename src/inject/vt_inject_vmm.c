/* vt_inject_vmm.c - the driver callbacks off the hot path of a tensor:
 * memory pools (create, destroy, trim, release threshold) and the virtual
 * memory management API (reserve, create, map, unmap, release). */
#include "vt_inject_int.h"

/* From on_driver (vt_inject_driver.c), for the pool and VMM callbacks;
 * rc: the API's result. */
void on_driver_vmm(inject_tls *T, CUpti_CallbackId cbid, const CUpti_CallbackData *cd, uint32_t dev, CUresult rc,
                   uint64_t corr)
{
    int ok = rc == CUDA_SUCCESS;
    switch (cbid) {
    case CB(cuMemPoolCreate): {
        P(cuMemPoolCreate_params);
        if (!ok) break;
        uint32_t pdev = p->poolProps && p->poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? (uint32_t)p->poolProps->location.id : dev;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL;
        ev.u.pool.op = VT_POOL_CREATE;
        ev.u.pool.pool = (uint64_t)(uintptr_t)*p->pool;
        ev.u.pool.device = pdev;
        ev.u.pool.corr = corr;
        vt_inject_capture_site(T, &ev.u.pool.site);
        vt_inject_emit(&ev);
        pool_track(ev.u.pool.pool, pdev);
        break;
    }
    case CB(cuMemPoolDestroy):
    case CB(cuMemPoolTrimTo):
    case CB(cuMemPoolSetAttribute): {
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL;
        ev.u.pool.device = dev;
        ev.u.pool.corr = corr;
        if (cbid == CB(cuMemPoolDestroy)) {
            P(cuMemPoolDestroy_params);
            ev.u.pool.op = VT_POOL_DESTROY;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            pool_untrack(ev.u.pool.pool);
        } else if (cbid == CB(cuMemPoolTrimTo)) {
            P(cuMemPoolTrimTo_params);
            ev.u.pool.op = VT_POOL_TRIM;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            ev.u.pool.value = p->minBytesToKeep;
        } else {
            P(cuMemPoolSetAttribute_params);
            if (p->attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || !p->value)
                break;
            ev.u.pool.op = VT_POOL_SET_THRESHOLD;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            ev.u.pool.value = *(const cuuint64_t *)p->value;
        }
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemAddressReserve): {
        P(cuMemAddressReserve_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_RESERVE;
        ev.u.vmm_range.address = *p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        vt_inject_capture_site(T, &ev.u.vmm_range.site);
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemAddressFree): {
        P(cuMemAddressFree_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_ADDRESS_FREE;
        ev.u.vmm_range.address = p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemCreate): {
        P(cuMemCreate_params);
        uint32_t pdev = dev;
        vt_memkind kind = VT_MEM_DEVICE;
        if (p->prop) {
            if (p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
                pdev = (uint32_t)p->prop->location.id;
            else
                kind = VT_MEM_PINNED_HOST;
        }
        if (!ok) {
            emit_failed(T, p->size, pdev, kind, VT_API_VMM, rc, 0, 0, corr);
            break;
        }
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_CREATE;
        ev.u.vmm_create.handle = (uint64_t)*p->handle;
        ev.u.vmm_create.size = p->size;
        ev.u.vmm_create.device = pdev;
        ev.u.vmm_create.kind = kind;
        ev.u.vmm_create.corr = corr;
        vt_inject_capture_site(T, &ev.u.vmm_create.site);
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemRelease): {
        P(cuMemRelease_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_RELEASE;
        ev.u.vmm_release.handle = (uint64_t)p->handle;
        ev.u.vmm_release.corr = corr;
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemMap): {
        P(cuMemMap_params);
        if (!ok) break;
        torch_seen_segment(T, p->ptr, p->size);
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_MAP;
        ev.u.vmm_map.address = p->ptr;
        ev.u.vmm_map.size = p->size;
        ev.u.vmm_map.offset = p->offset;
        ev.u.vmm_map.handle = (uint64_t)p->handle;
        ev.u.vmm_map.corr = corr;
        vt_inject_emit(&ev);
        break;
    }
    case CB(cuMemUnmap): {
        P(cuMemUnmap_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_UNMAP;
        ev.u.vmm_range.address = p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        vt_inject_emit(&ev);
        break;
    }
    default:
        break;
    }
}
