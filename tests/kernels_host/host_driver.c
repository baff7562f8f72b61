/* tests/kernels_host/host_driver.c — a stand-in for the CUDA driver
 * (libcuda.so.1) on a machine without a GPU, so that the real device's
 * code (runtime/device/cuda_real.c) runs: one device (compute 9.0, two
 * multiprocessors), a context, events timed by the host's clock. Its
 * memory and primitives are libvkernels_host.so's (host memory): point
 * VINTERP_KERNELS_LIB at it and VINTERP_TEST_CUDA_DRIVER at this library.
 * It loads no module and launches no generated kernel: those calls fail
 * with a message saying so (the device tier, --tier=off, needs none). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OK = 0, NO_DEVICE = 101, NOT_READY = 600, NOT_SUPPORTED = 801 };

static int ctx;

int cuInit(unsigned flags)
{
    (void)flags;
    return OK;
}

int cuDeviceGetCount(int *n)
{
    *n = 1;
    return OK;
}

int cuDeviceGet(int *h, int ordinal)
{
    if (ordinal != 0)
        return NO_DEVICE;
    *h = 0;
    return OK;
}

int cuDeviceGetName(char *buf, int len, int h)
{
    (void)h;
    snprintf(buf, (size_t)len, "the host standing in for a GPU (tests/kernels_host)");
    return OK;
}

int cuDeviceTotalMem_v2(size_t *bytes, int h)
{
    (void)h;
    *bytes = (size_t)8 << 30;
    return OK;
}

int cuDeviceGetAttribute(int *v, int attr, int h)
{
    (void)h;
    switch (attr) {
    case 16: *v = 2; break; /* multiprocessors */
    case 75: *v = 9; break; /* compute capability */
    case 76: *v = 0; break;
    default: *v = 0; break;
    }
    return OK;
}

int cuDevicePrimaryCtxRetain(void **c, int h)
{
    (void)h;
    *c = &ctx;
    return OK;
}

int cuCtxSetCurrent(void *c)
{
    (void)c;
    return OK;
}

int cuModuleLoadData(void **m, const void *image)
{
    (void)image;
    *m = NULL;
    return NOT_SUPPORTED;
}
int cuModuleUnload(void *m)
{
    (void)m;
    return OK;
}
int cuModuleGetFunction(void **f, void *m, const char *name)
{
    (void)m;
    (void)name;
    *f = NULL;
    return NOT_SUPPORTED;
}
int cuModuleGetGlobal_v2(unsigned long long *p, size_t *bytes, void *m, const char *name)
{
    (void)m;
    (void)name;
    *p = 0;
    *bytes = 0;
    return NOT_SUPPORTED;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **args, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)args,
        (void)extra;
    return NOT_SUPPORTED;
}

int cuGetErrorString(int e, const char **s)
{
    *s = e == OK ? "no error"
         : e == NOT_SUPPORTED ? "the host's stand-in for a GPU loads no module and launches no generated kernel"
         : e == NO_DEVICE ? "no such device"
                          : "error";
    return OK;
}

/* Events: the host's clock when recorded (the primitives ran at their
 * call, so the time between two events is theirs). For the tests:
 * $KHOST_EVENTS_PENDING=1 makes cuEventQuery say every event is
 * still pending (a device far behind the host), and
 * $KHOST_DRIVER_LOG=FILE gets, at exit, how many events were
 * created and recorded. */
static long events_created, events_recorded;

static void log_events(void)
{
    const char *path = getenv("KHOST_DRIVER_LOG");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "events created %ld, recorded %ld\n", events_created, events_recorded);
        fclose(f);
    }
}

__attribute__((constructor)) static void driver_loaded(void)
{
    if (getenv("KHOST_DRIVER_LOG"))
        atexit(log_events);
}
typedef struct {
    double t;
} Event;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cuEventCreate(void **e, unsigned flags)
{
    (void)flags;
    *e = calloc(1, sizeof(Event));
    events_created += *e != NULL;
    return *e ? OK : NOT_SUPPORTED;
}
int cuEventRecord(void *e, void *stream)
{
    (void)stream;
    ((Event *)e)->t = now();
    events_recorded++;
    return OK;
}
int cuEventQuery(void *e)
{
    (void)e;
    const char *p = getenv("KHOST_EVENTS_PENDING");
    return p && strcmp(p, "1") == 0 ? NOT_READY : OK;
}
int cuEventSynchronize(void *e)
{
    (void)e;
    return OK;
}
int cuEventElapsedTime(float *ms, void *a, void *b)
{
    *ms = (float)((((Event *)b)->t - ((Event *)a)->t) * 1e3);
    return OK;
}
int cuEventDestroy_v2(void *e)
{
    free(e);
    return OK;
}
