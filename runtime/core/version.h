/* runtime/core/version.h — the project version (--version, cache keys). */
#ifndef RUNTIME_VERSION_H
#define RUNTIME_VERSION_H

#define VINTERP_VERSION "0.2.0"

#endif
