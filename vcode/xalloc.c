/* vcode/xalloc.c — allocation that cannot fail (see xalloc.h). */
#include "vcode/xalloc.h"

#include <stdio.h>
#include <stdlib.h>

static void *check(void *p)
{
    if (!p) {
        fputs("vinterp: out of host memory\n", stderr);
        exit(1);
    }
    return p;
}

void *vc_xmalloc(size_t n) { return check(malloc(n ? n : 1)); }

void *vc_xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }

void *vc_xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
