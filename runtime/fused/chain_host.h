/* runtime/fused/chain_host.h — a chain (kernels.h VkExpr) evaluated on the
 * host: the device tier's short chains whose values the host wants
 * (cuda_chain.c, run_on_host: no launch, no wait beyond reading the
 * leaves). Node by node over blocks of elements, each common elementwise
 * operation (+ - *, the comparisons, AND OR NOT, SELECT, the conversions,
 * a copy) a loop of its own over the block, the others element by element
 * through vk_expr_apply: every element equals vk_expr_at's (the same
 * vcode/semantics.h functions), in a fraction of the time (radix_10m's
 * 6 000 host runs of 3 162 elements: 9 ns an element and node through
 * vk_expr_at, the interpreter's own loops' speed here).
 *
 * E as vk_expr_at takes it (vk_expr_ok), with no gather node and no
 * output that writes storage a leaf reads (run_on_host copies such a leaf
 * first); N elements. */
#ifndef RUNTIME_FUSED_CHAIN_HOST_H
#define RUNTIME_FUSED_CHAIN_HOST_H

#include <stdint.h>
#include "kernels/kernels.h"

void chain_host_eval(const VkExpr *e, int64_t n);

#endif
