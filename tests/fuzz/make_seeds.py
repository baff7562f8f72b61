#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py — (re)build tests/fuzz/seeds_exec/ from tests/golden.

The seeds are golden programs: some copied as they are, two with "{-c}" in
front (fuzz_exec then runs them with -c), and "mix_*" seeds that put several
small golden programs in one file (each one's FUNC MAIN renamed P1, P2, ...,
comments dropped, and a new MAIN calling them in turn) so that every
instruction appears in some seed. Each seed is at most 4096 bytes (the
fuzzers' -max_len)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")
OUT = os.path.join(HERE, "seeds_exec")

SINGLE = """example_b_segmented example_d_mixed ctl_recursion_fib ctl_if_nested
ctl_exit_in_call call_polymorphic const_segdes const_vectors_multiline const_char
pack_empty_segments permute_int dpermute_float bfpermute_int fpermute_bool dist_float
extract_int replace_float index_basic rank_int_segmented reduce_plus_float scan_max_int
segdes_make_lengths select_float stack_cpop_2_3 stack_pair_unpair srand_42 rand_stream
conv_out_of_range io_fwrite_std io_write_types""".split()

WITH_C = ["chk_ok_vector_ops", "chk_copy_bounds"]

MIXES = {
    "mix_cmp_logic": """cmp_int cmp_float cmp_float_nan logic_and_int logic_and_bool logic_or_int
        logic_or_bool logic_xor_bool logic_xor_int logic_not_bool logic_not_int""",
    "mix_arith": """arith_int_mul arith_int_mod arith_float_mul arith_float_div arith_empty_vectors
        shift_left shift_right""",
    "mix_scans": """scan_times_float scan_times_int scan_and_bool scan_and_int scan_or_bool scan_or_int
        scan_xor_bool scan_xor_int scan_min_float scan_min_int""",
    "mix_reduces": """reduce_times_float reduce_times_int reduce_and_bool reduce_and_int reduce_or_bool
        reduce_or_int reduce_xor_bool reduce_xor_int reduce_min_int reduce_min_float reduce_no_segments""",
    "mix_libm": """libm_acos libm_asin libm_atan libm_cos libm_cosh libm_exp libm_sin libm_sinh
        libm_tan libm_tanh libm_log libm_sqrt""",
    "mix_conv": """conv_b_to_i conv_i_to_b conv_i_to_f conv_floor conv_ceil conv_round conv_trunc
        fmt_float_nonfinite""",
    "mix_permutes": """dfpermute_float dfpermute_bool dfpermute_int bpermute_float bpermute_bool
        rank_float_ties""",
    "mix_misc": """length_types timer_sane io_read_stdin stack_rotate stack_swap const_empty""",
}


def read(name):
    with open(os.path.join(GOLDEN, name + ".vcode"), encoding="latin-1") as f:
        return f.read()


def strip_comments(text):
    # Comments are {...}; strings ("...") may hold braces, keep those.
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            j = n if j < 0 else j + 1
            out.append(text[i:j])
            i = j
        elif c == "{":
            j = text.find("}", i + 1)
            i = n if j < 0 else j + 1
        else:
            out.append(c)
            i += 1
    lines = [l.rstrip() for l in "".join(out).split("\n")]
    return "\n".join(l for l in lines if l.strip()) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    seeds = {}
    for name in SINGLE:
        seeds[name] = read(name)
    for name in WITH_C:
        seeds["c_" + name] = "{-c}" + read(name)
    for mix, names in MIXES.items():
        parts, calls = [], []
        for k, name in enumerate(names.split(), 1):
            body = strip_comments(read(name))
            if len(re.findall(r"^FUNC ", body, re.M)) != 1 or not body.startswith("FUNC MAIN\n"):
                sys.exit("make_seeds: %s is not a single FUNC MAIN" % name)
            parts.append("FUNC P%d\n" % k + body[len("FUNC MAIN\n"):])
            calls.append("CALL P%d\n" % k)
        seeds[mix] = "{ %s }\n" % names.split()[0] + "".join(parts) + "FUNC MAIN\n" + "".join(calls) + "RET\n"
    for name, text in sorted(seeds.items()):
        if len(text.encode("latin-1")) > 4096:
            sys.exit("make_seeds: %s is %d bytes" % (name, len(text)))
        with open(os.path.join(OUT, name + ".vcode"), "w", encoding="latin-1") as f:
            f.write(text)
    print("%d seeds in %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()
