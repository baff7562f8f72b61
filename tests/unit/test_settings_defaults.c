/* tests/unit/test_settings_defaults.c — the settings table's default texts
 * (runtime/core/settings.h, what --help and runtime/SETTINGS.md show) name
 * the numbers the runtime takes: each number in a default text is the
 * tuning header's constant it stands for (runtime/core/tuning.h,
 * runtime/fused/tuning.h). The layers keep settings.h from including the
 * tuning headers above it, so this test is what stops the two drifting. */
#include "check.h"
#include "runtime/core/settings.h"
#include "runtime/core/tuning.h"
#include "runtime/fused/tuning.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const dflt[SET_COUNT] = {
#define SETTING_DFLT(id, name, kind, lo, hi, choices, d, doc) [SET_##id] = d,
    VINTERP_SETTINGS(SETTING_DFLT)
#undef SETTING_DFLT
};

/* The N-th (from 0) number in setting ID's default text, or -1. */
static int64_t number(SettingId id, int n)
{
    const char *s = dflt[id];
    for (int k = 0; s && *s;) {
        if (*s >= '0' && *s <= '9') {
            char *end;
            long long v = strtoll(s, &end, 10);
            if (k++ == n)
                return v;
            s = end;
        } else {
            s++;
        }
    }
    return -1;
}

int main(void)
{
    CHECK(number(SET_LAZY_MIN, 0) == VAL_LAZY_MIN);
    CHECK(number(SET_TIER_WORK, 0) == TIER_WORK_CPU && number(SET_TIER_WORK, 1) == TIER_WORK_CUDA);
    CHECK(number(SET_TIER_MIN_LEN, 0) == TIER_MIN_LEN_CPU && number(SET_TIER_MIN_LEN, 1) == TIER_MIN_LEN_CUDA);
    CHECK(number(SET_TIER_DELAY_MS, 0) == TIER_DELAY_MS);
    /* "10 on 1-2 CPUs, else 100" */
    CHECK(number(SET_TIER_SHARE, 0) == TIER_SHARE_PCT_2CPU && number(SET_TIER_SHARE, 3) == 100);
    CHECK(number(SET_TIER_BUDGET_MS, 0) == TIER_BUDGET_MS);
    CHECK(number(SET_CUDA_HOST_MAX_ELEM, 0) == CUDA_HOST_MAX_ELEM && number(SET_CUDA_HOST_MAX_ELEM, 1) == 0);
    CHECK(number(SET_CUDA_HOST_MAX_SCAN, 0) == CUDA_HOST_MAX_SCAN && number(SET_CUDA_HOST_MAX_SCAN, 1) == 0);
    CHECK(number(SET_CUDA_HOST_MAX_LIB, 0) == CUDA_HOST_MAX_LIB && number(SET_CUDA_HOST_MAX_LIB, 1) == 0);
    CHECK(number(SET_CUDA_PART_BYTES, 0) == CUDA_PART_BYTES);
    CHECK(number(SET_DEVICE_MIN, 0) == DEVICE_MIN);
    /* and the test reads numbers: a text without one gives -1 */
    CHECK(number(SET_BACKEND, 0) == -1);
    return check_report("settings_defaults");
}
