/* vt_grow.h - the one growable-array step of the project: room for one
 * more element, the capacity doubling from `first`.
 *     if (VT_GROW(p->vmms, p->nvmms, p->capvmms, 64))
 *         return VT_ERR_NOMEM;
 * 0, or -1 with the array and its capacity unchanged (out of memory, or a
 * size that would overflow).  `cap` is an lvalue of an unsigned type. */
#ifndef VT_GROW_H
#define VT_GROW_H

#include <stdint.h>
#include <stdlib.h>

#define VT_GROW(arr, len, cap, first)                                                            \
    __extension__({                                                                              \
        int vt_grow_rc_ = 0;                                                                     \
        if ((size_t)(len) >= (size_t)(cap)) {                                                    \
            size_t vt_grow_nc_ = (cap) ? (size_t)(cap) * 2 : (size_t)(first);                    \
            __typeof__(arr) vt_grow_na_ = NULL;                                                  \
            if (vt_grow_nc_ > (size_t)(cap) && vt_grow_nc_ <= SIZE_MAX / sizeof(*(arr)) &&       \
                (__typeof__(cap))vt_grow_nc_ == vt_grow_nc_)                                     \
                vt_grow_na_ = realloc((arr), vt_grow_nc_ * sizeof(*(arr)));                      \
            if (vt_grow_na_) {                                                                   \
                (arr) = vt_grow_na_;                                                             \
                (cap) = (__typeof__(cap))vt_grow_nc_;                                            \
            } else {                                                                             \
                vt_grow_rc_ = -1;                                                                \
            }                                                                                    \
        }                                                                                        \
        vt_grow_rc_;                                                                             \
    })

#endif
