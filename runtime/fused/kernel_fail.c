/* runtime/fused/kernel_fail.c — the messages of generated code's run-time
 * errors (the codes of translate/codegen_abi.h): VCODE's faults in
 * vcode/semantics.h's words, the others worded as the λcu evaluator words
 * them. */
#include "runtime/fused/kernel_fail.h"
#include "runtime/core/errors.h"
#include "translate/codegen_abi.h"
#include "vcode/semantics.h"

void kernel_fail(int code, int64_t a, int64_t b, int64_t d)
{
    switch (code) {
    case VKF_DIV0: case VKF_DIVOVF: case VKF_MOD0: case VKF_MODOVF: case VKF_RAND0: case VKF_CHECKIDX:
        rt_fatal(vs_fault_format(code), (long long)a, (long long)b); /* vcode/semantics.h's */
    case VKF_SUB: rt_fatal("index %lld outside an array of length %lld", (long long)a, (long long)b);
    case VKF_SEGOF:
        rt_fatal("seg_of: element %lld outside descriptor x%lld of %lld elements", (long long)a, (long long)b,
                 (long long)d);
    case VKF_NOSEG: rt_fatal("seg_of: element %lld of x%lld lies in no segment", (long long)a, (long long)b);
    case VKF_SEGSTART:
    case VKF_SEGLEN:
        rt_fatal("%s: segment %lld outside descriptor x%lld of %lld segments",
                 code == VKF_SEGSTART ? "seg_start" : "seg_len", (long long)a, (long long)b, (long long)d);
    case VKF_PERM:
        rt_fatal(VS_MSG_PERMUTE_INDEX, (long long)b, (long long)a,
                 (long long)d);
    case VKF_DSTSEG:
        rt_fatal(VS_MSG_PERMUTE_PARTNER, (long long)a, "destination");
    case VKF_DFLTLEN:
        rt_fatal("destination descriptor covers %lld elements, default has %lld", (long long)a, (long long)b);
    default: rt_fatal("generated code failed with code %d", code);
    }
}

