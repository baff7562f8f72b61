/* runtime/device/vk_bind.c — the primitives' table (VkLib, cuda_dev.h)
 * filled from a dlopen'ed library of kernels/kernels.h's functions. */
#include "runtime/device/cuda_dev.h"

#include <dlfcn.h>
#include <string.h>

#define SYM(field, name)                                                                                 \
    do {                                                                                                 \
        void *s_ = dlsym(h, name);                                                                       \
        if (!s_) {                                                                                       \
            snprintf(why, len, "%s lacks %s", what, name);                                           \
            return -1;                                                                                   \
        }                                                                                                \
        memcpy(&lib->field, &s_, sizeof s_);                                                             \
    } while (0)

int vk_bind(void *h, const char *what, VkLib *lib, char *why, size_t len)
{
    SYM(seg_offsets, "vk_seg_offsets");
    SYM(seg_shape, "vk_seg_shape");
    SYM(reduce, "vk_reduce");
    SYM(scan, "vk_scan");
    SYM(seg_reduce, "vk_seg_reduce");
    SYM(seg_scan, "vk_seg_scan");
    SYM(seg_rank, "vk_seg_rank");
    SYM(rand, "vk_rand");
    SYM(elems_get, "vk_elems_get");
    SYM(elems_put, "vk_elems_put");
    SYM(map, "vk_map");
    SYM(expr, "vk_expr");
    SYM(expr_reduce, "vk_expr_reduce");
    SYM(dist, "vk_dist");
    SYM(index, "vk_index");
    SYM(seg_positions, "vk_seg_positions");
    SYM(scatter, "vk_scatter");
    SYM(scatter_many, "vk_scatter_many");
    SYM(scatter_fill, "vk_scatter_fill");
    SYM(scatter_fill_many, "vk_scatter_fill_many");
    SYM(gather, "vk_gather");
    SYM(select_flagged, "vk_select_flagged");
    SYM(last_error, "vk_last_error");
    return 0;
}
