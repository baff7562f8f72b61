/* runtime/core/trace.c — see trace.h. */
#include "runtime/core/trace.h"
#include "runtime/core/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double t0, dur;
    int64_t bytes;
    int tid;
    const char *cat;    /* a string literal of the caller's */
    char name[64];
} Event;

_Atomic int trace_on;
static FILE *out;
static double t_base;
static Event *ev;
static int64_t nev, ncap, dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int next_tid = 1;
static _Thread_local int my_tid;

int trace_open(const char *path)
{
    out = fopen(path, "w");
    if (!out)
        return -1;
    t_base = rt_seconds();
    trace_on = 1;
    atexit(trace_close);
    return 0;
}

double trace_now(void) { return trace_on ? (rt_seconds() - t_base) * 1e6 : 0.0; }

void trace_span(const char *cat, const char *name, double t0, double t1, int64_t bytes)
{
    if (!trace_on)
        return;
    pthread_mutex_lock(&lock);
    if (!my_tid)
        my_tid = next_tid++;
    if (nev == ncap && ncap < TRACE_MAX_EVENTS) {
        int64_t cap = ncap ? 2 * ncap : 4096;
        Event *e = realloc(ev, (size_t)cap * sizeof *e);
        if (e) {
            ev = e;
            ncap = cap;
        }
    }
    if (nev < ncap) {
        Event *e = &ev[nev++];
        e->t0 = t0;
        e->dur = t1 > t0 ? t1 - t0 : 0.0;
        e->bytes = bytes;
        e->tid = my_tid;
        e->cat = cat;
        snprintf(e->name, sizeof e->name, "%s", name);
    } else {
        dropped++;
    }
    pthread_mutex_unlock(&lock);
}

/* NAME as a JSON string's contents (quotes, backslashes and controls
 * escaped). */
static void json_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

void trace_close(void)
{
    pthread_mutex_lock(&lock);
    if (!trace_on || !out) {
        pthread_mutex_unlock(&lock);
        return;
    }
    trace_on = 0;
    fprintf(out, "[\n");
    fprintf(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"vinterp\"}}");
    for (int64_t i = 0; i < nev; i++) {
        const Event *e = &ev[i];
        fprintf(out, ",\n{\"name\": \"");
        json_text(out, e->name);
        fprintf(out, "\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": %d", e->cat,
                e->t0, e->dur, e->tid);
        if (e->bytes >= 0)
            fprintf(out, ", \"args\": {\"bytes\": %lld}", (long long)e->bytes);
        fputc('}', out);
    }
    if (dropped)
        fprintf(out, ",\n{\"name\": \"%lld events not kept (the first %d were)\", \"ph\": \"i\", \"ts\": 0, \"pid\": 1, "
                     "\"tid\": 1, \"s\": \"g\"}",
                (long long)dropped, TRACE_MAX_EVENTS);
    fprintf(out, "\n]\n");
    fclose(out);
    out = NULL;
    free(ev);
    ev = NULL;
    nev = ncap = 0;
    pthread_mutex_unlock(&lock);
}
