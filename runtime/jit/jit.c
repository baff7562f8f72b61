/* runtime/jit/jit.c — generated C to a loaded shared object, through the disk
 * cache (see jit.h). */
#include "runtime/jit/jit.h"
#include "runtime/core/clock.h"
#include "runtime/core/settings.h"
#include "runtime/core/version.h"
#include "translate/codegen_abi.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_FLAGS "-O2 -shared -fPIC -ffp-contract=off -fopenmp"

/* ---- hashing --------------------------------------------------------------- */

typedef struct {
    uint64_t a, b;
} Hash;

static void hash_init(Hash *h)
{
    h->a = 0xcbf29ce484222325ULL;
    h->b = 0x6a09e667f3bcc909ULL;
}

static void hash_add(Hash *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t a = h->a, b = h->b;
    for (size_t i = 0; i < len; i++) {
        a = (a ^ p[i]) * 0x100000001b3ULL;
        b = (b ^ p[i]) * 0x9e3779b97f4a7c15ULL;
        b ^= b >> 29;
    }
    h->a = a;
    h->b = b;
}

static void hash_str(Hash *h, const char *s)
{
    hash_add(h, s, strlen(s) + 1);
}

static void hash_hex(const Hash *h, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h->a, (unsigned long long)h->b);
}

void jit_hash_hex(const void *data, size_t len, char out[33])
{
    Hash h;
    hash_init(&h);
    hash_add(&h, data, len);
    hash_hex(&h, out);
}

/* ---- the compiler ------------------------------------------------------------ */

#if defined(__SANITIZE_THREAD__)
/* A race-detecting build (make tsan): the emulated device's units are
 * watched by ThreadSanitizer too (runtime/device/emul_grid.h), with lines. */
#define DEFAULT_CXXFLAGS "-x c++ -O1 -g -shared -fPIC -ffp-contract=off -fsanitize=thread"
#else
#define DEFAULT_CXXFLAGS "-x c++ -O2 -shared -fPIC -ffp-contract=off"
#endif

/* The language being compiled: C (the cpu executor) or C++ (the CUDA text
 * run on the emulated device). */
static _Thread_local JitLang cur_lang;

/* The compiler process of a background build, and whether the run is
 * ending (jit_abandon): then it is killed and nothing more is started. */
static atomic_int child_pid;
static atomic_int abandoned;
static atomic_uint tmp_seq;

static int is_cxx(JitLang lang) { return lang == JIT_CXX || lang == JIT_CXX_QUICK; }

static const char *cc_name(void)
{
    const char *cc = settings_text(is_cxx(cur_lang) ? SET_CXX : SET_CC);
    return cc && *cc ? cc : is_cxx(cur_lang) ? "c++" : "cc";
}

/* The options; the quick variant adds -O0 (the last -O wins). */
static const char *cc_flags(void)
{
    static _Thread_local char quick[1024];
    const char *f = settings_text(is_cxx(cur_lang) ? SET_CXXFLAGS : SET_CFLAGS);
    if (!f)
        f = is_cxx(cur_lang) ? DEFAULT_CXXFLAGS : DEFAULT_FLAGS;
    if (cur_lang != JIT_CXX_QUICK)
        return f;
    snprintf(quick, sizeof quick, "%s -O0", f);
    return quick;
}

/* The compiler's file (searched on PATH) and its stat: its identity. */
static int cc_find(char *path, size_t len, struct stat *st)
{
    const char *cc = cc_name();
    if (strchr(cc, '/')) {
        snprintf(path, len, "%s", cc);
        return stat(path, st) == 0 && (st->st_mode & S_IXUSR) ? 0 : -1;
    }
    const char *pathvar = settings_text(SET_PATH);
    if (!pathvar)
        pathvar = "/usr/bin:/bin";
    while (*pathvar) {
        const char *end = strchr(pathvar, ':');
        size_t n = end ? (size_t)(end - pathvar) : strlen(pathvar);
        if (n > 0 && n < len - 2) {
            snprintf(path, len, "%.*s/%s", (int)n, pathvar, cc);
            if (stat(path, st) == 0 && S_ISREG(st->st_mode) && (st->st_mode & S_IXUSR))
                return 0;
        }
        pathvar += n;
        if (*pathvar == ':')
            pathvar++;
    }
    return -1;
}

int jit_have_compiler(void)
{
    return jit_have(JIT_C);
}

int jit_have(JitLang lang)
{
    static int known[3] = { -1, -1, -1 }; /* the main thread asks, before any worker */
    char path[PATH_MAX];
    struct stat st;
    cur_lang = lang;
    if (known[lang] < 0)
        known[lang] = cc_find(path, sizeof path, &st) == 0;
    return known[lang];
}

/* A compiler runs in a process group of its own (see run_cc), so a signal
 * that ends us from the terminal does not reach it: these handlers kill
 * its group, then end us as the signal would have. Installed once, over
 * default dispositions only. */
static void on_fatal_signal(int sig)
{
    int pid = atomic_load(&child_pid);
    if (pid > 0)
        kill(-(pid_t)pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void hook_fatal_signals(void)
{
    static atomic_int hooked;
    if (atomic_exchange(&hooked, 1))
        return;
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_fatal_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, NULL);
        }
    }
}

/* Pacing (jit_set_paced, jit_pace): the group of the paced compile in
 * progress (0: none), and whether it is stopped. pace_mu keeps jit_pace
 * from signalling a group whose leader has been reaped (its pid could be
 * another process's by then). */
static _Thread_local int paced_here;
static pthread_mutex_t pace_mu = PTHREAD_MUTEX_INITIALIZER;
static int paced_pid, paced_stopped; /* under pace_mu */

void jit_set_paced(int on) { paced_here = on; }

int jit_pace(int stop)
{
    pthread_mutex_lock(&pace_mu);
    int pid = paced_pid;
    stop = stop && !atomic_load(&abandoned);
    if (pid > 0 && stop != paced_stopped) {
        kill(-(pid_t)pid, stop ? SIGSTOP : SIGCONT);
        paced_stopped = stop;
    }
    pthread_mutex_unlock(&pace_mu);
    return pid > 0;
}

/* Run the compiler: SRC -> OUT, its messages into LOG. PACED: jit_pace may
 * stop it. 0 on success. */
static int run_cc(const char *src, const char *out, const char *log, int paced)
{
    char flags[1024];
    snprintf(flags, sizeof flags, "%s", cc_flags());
    char *argv[64], *save = NULL;
    int argc = 0;
    argv[argc++] = (char *)cc_name();
    for (char *tok = strtok_r(flags, " \t", &save); tok && argc < 56; tok = strtok_r(NULL, " \t", &save))
        argv[argc++] = tok;
    argv[argc++] = "-o";
    argv[argc++] = (char *)out;
    argv[argc++] = (char *)src;
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* The driver in a process group of its own, so that an abandoned
     * compile kills its assembler and linker too (killed alone, the driver
     * leaves them running, and the linker writes its output after we have
     * cleaned up). */
    hook_fatal_signals();
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    if (atomic_load(&abandoned)) {
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        return -1;
    }
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return -1;
    atomic_store(&child_pid, (int)pid);
    if (atomic_load(&abandoned)) /* jit_abandon ran between the spawn and the store */
        kill(-pid, SIGKILL);
    if (paced) {
        pthread_mutex_lock(&pace_mu);
        paced_pid = (int)pid;
        paced_stopped = 0;
        pthread_mutex_unlock(&pace_mu);
    }
    /* Wait for the driver's end without reaping it, so that its pid (the
     * group's) stays ours until jit_pace can no longer signal it. */
    int status = 0, ok = 1;
    siginfo_t si;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0)
        if (errno != EINTR) {
            ok = 0;
            break;
        }
    if (paced) {
        pthread_mutex_lock(&pace_mu);
        paced_pid = 0;
        paced_stopped = 0;
        pthread_mutex_unlock(&pace_mu);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            ok = 0;
            break;
        }
    if (atomic_load(&abandoned))
        kill(-pid, SIGKILL); /* what is left of the group */
    atomic_store(&child_pid, 0);
    return ok && !atomic_load(&abandoned) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void log_excerpt(const char *log, char *msg, size_t msglen, const char *what)
{
    char text[600] = "";
    FILE *f = fopen(log, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    for (char *p = text; *p; p++)
        if (*p == '\n')
            *p = ' ';
    snprintf(msg, msglen, "%s: %s %s", what, cc_name(), text);
}

/* ---- the cache ----------------------------------------------------------------- */

static int mkdirs(const char *dir)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int cache_dir(const JitOptions *o, char *out, size_t len)
{
    const char *d = o->cache_dir;
    if (!d || !*d)
        d = settings_text(SET_CACHE_DIR);
    if (d && *d) {
        snprintf(out, len, "%s", d);
        return 0;
    }
    const char *x = settings_text(SET_XDG_CACHE_HOME);
    if (x && *x) {
        snprintf(out, len, "%s/vinterp", x);
        return 0;
    }
    const char *h = settings_text(SET_HOME);
    if (h && *h) {
        snprintf(out, len, "%s/.cache/vinterp", h);
        return 0;
    }
    return -1;
}

static int cache_off(const JitOptions *o)
{
    if (o->private_dir)
        return 0;
    return o->no_cache || settings_count(SET_NO_CACHE, 0) == 1;
}

static int write_file(const char *path, const char *a, size_t alen, const char *b, size_t blen)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(a, 1, alen, f) == alen && fwrite(b, 1, blen, f) == blen;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* dlopen PATH and check its key. */
static void *load_checked(const char *path, const char *key)
{
    /* Generated units use OpenMP; libgomp reads its settings when the first
     * unit loads it. Its default lets idle workers spin between parallel
     * regions, which on a machine with few cores takes the core the main
     * thread needs for the host steps and small kernels between them
     * (qs_5m on 2 cores: 3.2 s spinning, 1.0 s passive). A value the user
     * set is kept. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE); /* OpenMP threads may outlive dlclose */
    if (!h)
        return NULL;
    const char *k = dlsym(h, "vk_unit_key");
    if (!k || strcmp(k, key) != 0) {
        dlclose(h);
        return NULL;
    }
    return h;
}

void jit_init(void)
{
    /* Before any thread starts (setenv is not thread-safe). */
    setenv("OMP_WAIT_POLICY", "passive", 0);
}

static char private_cache[1024];

static void remove_private_cache(void)
{
    if (!private_cache[0])
        return;
    DIR *d = opendir(private_cache);
    if (d) {
        struct dirent *de;
        char path[1400];
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", private_cache, de->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(private_cache);
    private_cache[0] = '\0';
}

int jit_private_dir(JitOptions *o, char *msg, size_t msglen)
{
    const char *t = settings_text(SET_TMPDIR);
    snprintf(private_cache, sizeof private_cache, "%s/vinterp-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(private_cache)) {
        snprintf(msg, msglen, "cannot make a temporary directory under %s: %s", t && *t ? t : "/tmp",
                 strerror(errno));
        private_cache[0] = '\0';
        return -1;
    }
    atexit(remove_private_cache);
    o->cache_dir = private_cache;
    o->private_dir = 1;
    return 0;
}

int jit_compiling(void) { return atomic_load(&child_pid) > 0; }

void jit_abandon(void)
{
    atomic_store(&abandoned, 1);
    int pid = atomic_load(&child_pid);
    if (pid > 0)
        kill(-(pid_t)pid, SIGKILL); /* the driver's group: cc1, as, ld */
}

void jit_after_fork(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pace_mu = fresh; /* a thread of the parent may have held it: none runs here */
    paced_pid = paced_stopped = 0;
    paced_here = 0;
    atomic_store(&child_pid, 0);
    atomic_store(&abandoned, 0);
}

int jit_dir(const JitOptions *o, char *out, size_t len)
{
    if (cache_off(o))
        return 1;
    if (cache_dir(o, out, len) < 0 || mkdirs(out) < 0)
        return -1;
    return 0;
}

void *jit_load_c(const JitOptions *o, const char *src, size_t len, JitStats *st, char *srcpath, size_t srcpathlen,
                 char *msg, size_t msglen)
{
    return jit_load(o, JIT_C, src, len, st, srcpath, srcpathlen, msg, msglen);
}

/* Find or compile SRC; LOAD: dlopen it (else only make sure the cache
 * holds it, and return a non-NULL dummy). PROBE (with !LOAD): compile
 * nothing; *MISSING = 1 when it is not in the cache. */
static void *find_or_compile(const JitOptions *o, JitLang lang, const char *src, size_t len, JitStats *st,
                             char *srcpath, size_t srcpathlen, char *msg, size_t msglen, int load, int probe,
                             int *missing)
{
    cur_lang = lang;
    const char *ext = is_cxx(lang) ? "cpp" : "c";
    char ccpath[PATH_MAX];
    struct stat ccst;
    if (srcpathlen)
        srcpath[0] = '\0';
    if (cc_find(ccpath, sizeof ccpath, &ccst) < 0) {
        snprintf(msg, msglen, "no %s compiler: '%s' is not on PATH (set %s)", is_cxx(lang) ? "C++" : "C",
                 cc_name(), is_cxx(lang) ? "VINTERP_CXX" : "VINTERP_CC");
        return NULL;
    }
    Hash h;
    hash_init(&h);
    hash_add(&h, src, len);
    hash_str(&h, is_cxx(lang) ? "target=cuda-emulated-c++" : "target=c");
    hash_str(&h, ccpath);
    char ident[96];
    snprintf(ident, sizeof ident, "%lld:%lld", (long long)ccst.st_size, (long long)ccst.st_mtime);
    hash_str(&h, ident);
    hash_str(&h, cc_flags());
    hash_str(&h, VINTERP_VERSION);
    snprintf(ident, sizeof ident, "abi%d", VK_ABI_VERSION);
    hash_str(&h, ident);
    char key[33];
    hash_hex(&h, key);
    char trailer[128];
    int tlen = snprintf(trailer, sizeof trailer, "\n%sconst char vk_unit_key[] = \"%s\";\n",
                        is_cxx(lang) ? "extern \"C\" " : "", key);

    int off = cache_off(o);
    if (off && !load) {
        snprintf(msg, msglen, "internal error: a build without a cache");
        return NULL;
    }
    char dir[1024];
    if (off) {
        const char *t = settings_text(SET_TMPDIR);
        snprintf(dir, sizeof dir, "%s/vinterp-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            snprintf(msg, msglen, "cannot make a temporary directory under %s: %s", t && *t ? t : "/tmp",
                     strerror(errno));
            return NULL;
        }
        st->dir[0] = '\0';
    } else {
        if (cache_dir(o, dir, sizeof dir) < 0 || mkdirs(dir) < 0) {
            snprintf(msg, msglen, "cannot use the kernel cache directory '%s' (%s); --no-cache runs without it",
                     dir, strerror(errno));
            return NULL;
        }
        snprintf(st->dir, sizeof st->dir, "%s", dir);
    }
    char so[1200], cfile[1200], tmp_so[1300], tmp_c[1300], log[1300];
    snprintf(so, sizeof so, "%s/%s.so", dir, key);
    snprintf(cfile, sizeof cfile, "%s/%s.%s", dir, key, ext);
    double t0 = rt_seconds();
    if (probe) {
        *missing = access(so, R_OK) != 0;
        return st;
    }
    if (!off) {
        void *hd = NULL;
        if (access(so, R_OK) == 0) {
            if (!load) {
                st->hits++;
                snprintf(srcpath, srcpathlen, "%s", cfile);
                return st; /* validated when it is loaded */
            }
            hd = load_checked(so, key);
            if (hd) {
                st->hits++;
                st->load_seconds += rt_seconds() - t0;
                snprintf(srcpath, srcpathlen, "%s", cfile);
                return hd;
            }
            st->rejected++;
            unlink(so); /* corrupt or foreign: never trusted */
        }
    }
    unsigned rnd = (unsigned)getpid() * 1000u + atomic_fetch_add(&tmp_seq, 1u);
    snprintf(tmp_c, sizeof tmp_c, "%s/%s.%u.tmp.%s", dir, key, rnd, ext);
    snprintf(tmp_so, sizeof tmp_so, "%s/%s.%u.tmp.so", dir, key, rnd);
    snprintf(log, sizeof log, "%s/%s.%u.log", dir, key, rnd);
    if (write_file(tmp_c, src, len, trailer, (size_t)tlen) < 0) {
        snprintf(msg, msglen, "cannot write %s: %s", tmp_c, strerror(errno));
        unlink(tmp_c);
        if (off)
            rmdir(dir);
        return NULL;
    }
    /* A compile abandoned at the end of an earlier run left KEY.abandoned:
     * this one runs unpaced, so that a run as long as that one completes
     * it (paced, every run would abandon it again at the same point). The
     * marker is metadata, never a cache entry. */
    char mark[1300];
    snprintf(mark, sizeof mark, "%s/%s.abandoned", dir, key);
    int retry = !off && access(mark, F_OK) == 0;
    double c0 = rt_seconds();
    int rc = run_cc(tmp_c, tmp_so, log, paced_here && !retry);
    st->compile_seconds += rt_seconds() - c0;
    void *hd = NULL;
    if (rc < 0 && atomic_load(&abandoned)) {
        snprintf(msg, msglen, "the compile was abandoned at the end of the run");
        if (!off) {
            int fd = open(mark, O_WRONLY | O_CREAT, 0644);
            if (fd >= 0)
                close(fd);
        }
    } else if (rc < 0) {
        log_excerpt(log, msg, msglen,
                    is_cxx(lang) ? "compiling the generated CUDA as host C++ failed" : "compiling the generated C failed");
    } else {
        if (retry)
            unlink(mark);
        st->compiled++;
        if (off) {
            hd = load_checked(tmp_so, key);
        } else if (rename(tmp_so, so) == 0 && rename(tmp_c, cfile) == 0) {
            hd = load ? load_checked(so, key) : (void *)st;
            snprintf(srcpath, srcpathlen, "%s", cfile);
        }
        if (!hd) {
            const char *de = dlerror();
            snprintf(msg, msglen, "the compiled unit does not load: %s", de ? de : "bad key");
        }
    }
    unlink(tmp_c);
    unlink(tmp_so);
    unlink(log);
    if (off)
        rmdir(dir);
    return hd;
}

void *jit_load(const JitOptions *o, JitLang lang, const char *src, size_t len, JitStats *st, char *srcpath,
               size_t srcpathlen, char *msg, size_t msglen)
{
    return find_or_compile(o, lang, src, len, st, srcpath, srcpathlen, msg, msglen, 1, 0, NULL);
}

int jit_build(const JitOptions *o, JitLang lang, const char *src, size_t len, JitStats *st, int probe, char *srcpath,
              size_t srcpathlen, char *msg, size_t msglen)
{
    char none[8];
    int missing = 0;
    if (!srcpathlen)
        srcpath = none;
    if (!find_or_compile(o, lang, src, len, st, srcpath, srcpathlen, msg, msglen, 0, probe, &missing))
        return -1;
    return missing;
}
