/* runtime/fused/cuda_tier_report.c — the device tier's -d stats lines
 * (cuda_tier_report, exec_cuda_impl.h): what ran where, what crossed the
 * bus and why, the pending checks, the chains, the guards, the read-ahead;
 * from the tier's counters (cuda_tier_impl.h) and the chains' (cuda_chain.h). */
#include "runtime/fused/cuda_tier_impl.h"
#include "runtime/fused/cuda_chain.h"
#include "vcode/optable.h"

#include <stdio.h>

/* A -d stats line: TITLE, then each instruction's N[op] (and its BYTES[op]) where it is not 0. */
static void print_by_op(FILE *f, const char *title, const int64_t *n, const int64_t *bytes)
{
    fprintf(f, "stats: device tier: %s", title);
    for (int op = 0; op < OP_COUNT; op++)
        if (n[op])
            fprintf(f, " %s %lld (%lld bytes)", vc_ops[op].name, (long long)n[op], (long long)bytes[op]);
    fputc('\n', f);
}

void cuda_tier_report(const CudaTier *t, FILE *f)
{
    int64_t ran = 0, fell = 0, fell_bytes = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        ran += t->ran[op];
        fell += t->fell[op];
        fell_bytes += t->fell_bytes[op];
    }
    fprintf(f, "stats: device tier: %lld instructions on the device (placement at %lld elements), %lld host vectors "
               "uploaded as operands (%lld bytes), %lld results written in place (%lld of them LENGTHS and MAKE_SEGDES "
               "over their argument's storage)\n",
            (long long)ran, (long long)t->min, (long long)t->up_count, (long long)t->up_bytes,
            (long long)t->in_place, (long long)t->taken);
    fprintf(f, "stats: device tier: EXTRACT's and REPLACE's positions made on the host: %lld times the same as ones "
               "kept on the device (%lld bytes not uploaded)\n",
            (long long)t->pos_reused, (long long)t->pos_reused_bytes);
    fprintf(f, "stats: device tier: instructions run there (and the host's waits in them):");
    for (int op = 0; op < OP_COUNT; op++)
        if (t->ran[op])
            fprintf(f, " %s %lld (%lld)", vc_ops[op].name, (long long)t->ran[op], (long long)t->waits[op]);
    fputc('\n', f);
    int64_t inb = 0;
    for (int op = 0; op < OP_COUNT; op++)
        inb += t->in_blocks[op];
    if (inb) {
        fprintf(f, "stats: device tier: of these, fused blocks' steps on metadata done there, not on the host:");
        for (int op = 0; op < OP_COUNT; op++)
            if (t->in_blocks[op])
                fprintf(f, " %s %lld", vc_ops[op].name, (long long)t->in_blocks[op]);
        fputc('\n', f);
    }
    if (t->up_count)
        print_by_op(f, "host vectors uploaded as operands, by instruction:", t->up_op, t->up_op_bytes);
    int64_t declined = 0;
    for (int op = 0; op < OP_COUNT; op++)
        declined += t->mem_declined[op];
    if (declined) {
        fprintf(f, "stats: device tier: %lld instructions left on the host for want of device memory:",
                (long long)declined);
        for (int op = 0; op < OP_COUNT; op++)
            if (t->mem_declined[op])
                fprintf(f, " %s %lld", vc_ops[op].name, (long long)t->mem_declined[op]);
        fputc('\n', f);
    }
    fprintf(f, "stats: device tier: %lld checks (permutes' indices, Int / and %%, RAND's range, EXTRACT's and "
               "REPLACE's indices: %lld) left on the device, read in %lld reads (%lld of them waits of their own: I/O, "
               "EXIT, the end, 64 pending)\n",
            (long long)t->deferred, (long long)t->pos_deferred, (long long)t->settles, (long long)t->settle_waits);
    fprintf(f, "stats: device tier: fused block runs' error records among them: %lld, %lld of them read after the "
               "block's end (with a later wait)\n",
            (long long)t->blk_records, (long long)t->blk_deferred);
    fprintf(f, "stats: device tier: %lld host instructions read short device vectors (%lld bytes: a reduction's sums "
               "for an IF, and such)\n",
            (long long)t->short_reads, (long long)t->short_bytes);
    if (t->short_reads)
        print_by_op(f, "host instructions that read short device vectors, by instruction:", t->short_op,
                    t->short_op_bytes);
    const ChainStats *cs = chain_stats();
    fprintf(f, "stats: device tier: %lld instructions deferred into chains, %lld chains taken into "
               "another, %lld chains run (one launch each) writing %lld vectors, %lld of them with a reduction, %lld "
               "dropped unrun, %lld cut at the kernel's bounds; of the deferred, %lld DISTs, %lld INDEXes and %lld "
               "gathers (BPERMUTE), %lld of them checked with another's record\n",
            (long long)cs->deferred, (long long)cs->merged, (long long)cs->runs, (long long)cs->outputs,
            (long long)cs->reduced, (long long)cs->dropped, (long long)cs->full, (long long)cs->spread,
            (long long)cs->indexed, (long long)cs->gathers, (long long)cs->gather_joins);
    fprintf(f, "stats: device tier: short chains: %lld run on the host (no launch: the host wanted their values), "
               "%lld written into a REPLACE's vector as they ran\n",
            (long long)cs->host_runs, (long long)cs->puts);
    fprintf(f, "stats: device tier: IFs whose THEN branch is a runtime error exit taken ahead of their condition "
               "(read with a later wait): %lld\n",
            (long long)t->guard_ifs);
    fprintf(f, "stats: device tier: chains wanted at the same time: %lld run in another's launch\n",
            (long long)cs->together);
    fprintf(f, "stats: device tier: scatters at one index (PERMUTE, DPERMUTE into a fill): %lld deferred, %lld of them "
               "joining another's launch; %lld launches\n",
            (long long)cs->scatters, (long long)cs->scatter_joins, (long long)cs->scatter_runs);
    fprintf(f, "stats: device tier: read ahead: %lld waits for a short vector brought back %lld more of its length "
               "from the stack (%lld bytes)\n",
            (long long)t->ahead_waits, (long long)t->ahead_vals, (long long)t->ahead_bytes);
    if (!fell) {
        fprintf(f, "stats: device tier: no instruction read a long device vector on the host\n");
        return;
    }
    fprintf(f, "stats: device tier: %lld instructions ran on the host with long device operands (%lld bytes read back):",
            (long long)fell, (long long)fell_bytes);
    for (int op = 0; op < OP_COUNT; op++)
        if (t->fell[op])
            fprintf(f, " %s %lld (%lld bytes)", vc_ops[op].name, (long long)t->fell[op], (long long)t->fell_bytes[op]);
    fputc('\n', f);
}
