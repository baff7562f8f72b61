/* tests/fuzz/fuzz_frontend.c — libFuzzer target for the VCODE front end.
 *
 * Arbitrary bytes go through the lexer and parser (vc_parse_string), the
 * linker (vc_link) and the static checker (vc_check), then the program is
 * printed as -d program prints it (to /dev/null) and freed. None of this
 * may crash, leak, hang or trip a sanitizer, whatever the input.
 *
 * The lexer's "Unexpected character" warnings and the parser's
 * redefinition warnings go to stderr; `make fuzz-smoke` silences them with
 * -close_fd_mask=2 (sanitizer reports still get through). */
#include "vcode/printer.h"
#include "vcode/program.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = fopen("/dev/null", "w");
    if (!devnull) {
        perror("fuzz_frontend: /dev/null");
        return 1;
    }
    /* -d lex: the token trace is part of the lexer's code paths. */
    vc_trace.lex_trace = devnull;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Program p;
    VcError err;
    /* The text is not NUL-terminated: the front end must stay inside
     * [data, data + size). */
    if (vc_parse_string("fuzz.vcode", (const char *)data, size, &p, &err) == 0 &&
        vc_link(&p, &err) == 0) {
        (void)vc_check(&p, &err);
        vc_print_program(devnull, &p);
    }
    vc_free(&p);
    return 0;
}
