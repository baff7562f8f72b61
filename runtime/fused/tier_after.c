/* runtime/fused/tier_after.c — the child process of the compiles after the
 * run (see tier_after.h). */
#define _GNU_SOURCE
#include "runtime/fused/tier_after.h"
#include "runtime/jit/jit.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a test's gate waits for its file (a hang guard). */
#define GATE_LIMIT_S 600

static void child(TierAfter mode, int idle, const char *gate, TierAfterWork work, void *arg)
{
    if (mode == TIER_AFTER_DETACH)
        setsid(); /* no terminal's signals, no one's process group */
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
    setpriority(PRIO_PROCESS, 0, 10);
#ifdef SCHED_IDLE
    if (idle) {
        struct sched_param sp = { 0 };
        sched_setscheduler(0, SCHED_IDLE, &sp);
    }
#else
    (void)idle;
#endif
    jit_after_fork();
    if (gate) {
        struct timespec nap = { 0, 20000000 };
        for (int i = 0; i < GATE_LIMIT_S * 50 && access(gate, F_OK) != 0; i++)
            nanosleep(&nap, NULL);
    }
    work(arg);
    _exit(0); /* the parent's exit handlers and buffers are the parent's */
}

int tier_after_run(TierAfter mode, int idle, const char *gate, TierAfterWork work, void *arg)
{
    if (mode == TIER_AFTER_OFF)
        return -1;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        child(mode, idle, gate, work, arg);
    if (mode == TIER_AFTER_WAIT) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    return 0;
}
