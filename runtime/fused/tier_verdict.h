/* runtime/fused/tier_verdict.h — a block's measured speeds in both tiers, kept
 * in the kernel cache beside its unit (UNIT.PROGRAM.tier, UNIT the unit's
 * source file without its extension), summed over the runs of a program.
 *
 * Within one run a block that runs a few times cannot be judged before it
 * has done its damage (qs_5m: blocks run 2-9 times, fused 2-5x slower),
 * and a run's samples are few and noisy. Summed over runs, the verdict
 * settles, and a later run starts from it: a block whose fused runs were
 * the slower is never run fused again.
 *
 * The file is one line of text: "vinterp-tier 1 LATE_N LATE_SECS LATE_WORK
 * FUSED_N FUSED_SECS FUSED_WORK" (interpreted runs sampled after the
 * install, or, for a block compiled after the run (tier_after.h), its
 * interpreted runs of that run but the first; fused runs, the first of
 * each run not counted). It is written
 * to a temporary name and renamed; a file that does not parse is ignored.
 * Concurrent runs may lose each other's samples, never corrupt them. */
#ifndef RUNTIME_TIER_VERDICT_H
#define RUNTIME_TIER_VERDICT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "vcode/program.h"

typedef struct {
    int64_t late_n, late_work, fused_n, fused_work;
    double late_secs, fused_secs;
} TierSpeeds;

/* The path of UNIT_FILE's verdict for the program whose identity is
 * PROGRAM (tier_program_id), in OUT (LEN bytes): UNIT.PROGRAM.tier. One
 * unit serves the same block text in several programs, whose workloads
 * differ, so each program keeps its own. 0, or -1 when it does not fit. */
int tier_verdict_path(const char *unit_file, uint64_t program, char *out, size_t len);
/* FNV-1a, 64 bits: H updated with N bytes of DATA, from TIER_FNV_SEED. */
#define TIER_FNV_SEED 14695981039346656037ULL
uint64_t tier_fnv(uint64_t h, const void *data, size_t n);
/* A program's identity: a hash of its instructions and constants. */
uint64_t tier_program_id(const Program *p);
/* Read PATH into S (zeros when missing or malformed). 1 when read. */
int tier_verdict_read(const char *path, TierSpeeds *s);
/* Write S to PATH (temporary name, rename). 0 or -1. */
int tier_verdict_write(const char *path, const TierSpeeds *s);
/* Write to PATH what WRITE(F, ARG) prints (0, or -1 on an error), through
 * a temporary name and a rename: a reader sees the old file or the new
 * one, never a part. 0 or -1. */
int tier_file_replace(const char *path, int (*write)(FILE *f, const void *arg), const void *arg);
/* 1 when S is enough to judge (two sampled interpreted runs, four fused
 * ones) and the fused runs are the slower per unit of work; 0 when enough
 * and they are not; -1 when not enough. */
int tier_verdict_slower(const TierSpeeds *s);

#endif
