/* tests/unit/test_seg_plan.c — kernels/seg_plan.h, the one rule for how a
 * segmented reduction or scan spreads over a GPU: by the average length
 * and the longest segment, so that one long segment among short ones is
 * not walked by one thread or one warp. */
#include "check.h"
#include "kernels/seg_plan.h"

int main(void)
{
    /* nothing to do */
    CHECK(vk_seg_plan(0, 0, 0, 100) == VK_PLAN_THREAD);
    CHECK(vk_seg_plan(0, 5, 0, 100) == VK_PLAN_THREAD);
    /* short segments: a thread each */
    CHECK(vk_seg_plan(1000 * 3, 1000, 3, 100) == VK_PLAN_THREAD);
    CHECK(vk_seg_plan(1000 * 15, 1000, 256, 100) == VK_PLAN_THREAD);
    /* short on average, one of a million: not a thread's walk, and not a
     * warp's (a million / 32 steps): chunks */
    CHECK(vk_seg_plan(1000000 + 999 * 3, 1000, 1000000, 100) == VK_PLAN_CHUNK);
    /* short on average, one of 5000: a warp walks it in 157 steps */
    CHECK(vk_seg_plan(5000 + 999 * 3, 1000, 5000, 100) == VK_PLAN_WARP);
    /* the longest unknown (a descriptor made on the device) counts as all
     * of the data */
    CHECK(vk_seg_plan(100000 * 3, 100000, -1, 100) == VK_PLAN_CHUNK);
    CHECK(vk_seg_plan(100 * 3, 100, -1, 100) == VK_PLAN_WARP);
    /* medium segments: a warp each */
    CHECK(vk_seg_plan(1000 * 100, 1000, 120, 100) == VK_PLAN_WARP);
    CHECK(vk_seg_plan(1000 * 1023, 1000, 8192, 100) == VK_PLAN_WARP);
    CHECK(vk_seg_plan(1000 * 1023, 1000, 8193, 100) == VK_PLAN_BLOCK);
    /* long segments: a block each when there are enough of them to fill
     * the device and none is too long, else chunks */
    CHECK(vk_seg_plan(2000 * 5000, 2000, 5000, 1000) == VK_PLAN_BLOCK);
    CHECK(vk_seg_plan(200 * 5000, 200, 5000, 1000) == VK_PLAN_CHUNK);
    CHECK(vk_seg_plan(2000 * 5000, 2000, 1000000, 1000) == VK_PLAN_CHUNK);
    /* no block strategy (the primitives): chunks */
    CHECK(vk_seg_plan(2000 * 5000, 2000, 5000, 0) == VK_PLAN_CHUNK);
    /* one segment: by its length */
    CHECK(vk_seg_plan(10, 1, 10, 0) == VK_PLAN_THREAD);
    CHECK(vk_seg_plan(500, 1, 500, 0) == VK_PLAN_WARP);
    CHECK(vk_seg_plan(1 << 20, 1, 1 << 20, 0) == VK_PLAN_CHUNK);
    return check_report("test_seg_plan");
}
