/* vcode/xalloc.h — allocation that cannot fail: out of host memory, the
 * program stops with "vinterp: out of host memory" and exit status 1
 * (used by the front end and the translator; the runtime reports through
 * rt_fatal, with the VCODE line). A size of 0 allocates 1 byte. */
#ifndef VCODE_XALLOC_H
#define VCODE_XALLOC_H

#include <stddef.h>

void *vc_xmalloc(size_t n);
void *vc_xcalloc(size_t n, size_t size);
void *vc_xrealloc(void *p, size_t n);

#endif
