/* runtime/core/settings.c — the settings table read from the environment
 * (see settings.h). */
#include "runtime/core/settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    SettingKind kind;
    int64_t lo, hi;
    const char *choices, *dflt, *doc;
} SettingDef;

static const SettingDef defs[SET_COUNT] = {
#define SETTING_DEF(id, name, kind, lo, hi, choices, dflt, doc) { name, kind, lo, hi, choices, dflt, doc },
    VINTERP_SETTINGS(SETTING_DEF)
#undef SETTING_DEF
};

typedef struct {
    int given;
    int64_t num;      /* COUNT, POW2, FLAG; CHOICE: the index */
    const char *text; /* TEXT, SYSTEM: the environment's string */
} SettingValue;

static SettingValue vals[SET_COUNT];
static int loaded;

/* CHOICES' K-th entry as [*S, *S + *N); -1 past the last. */
static int choice_at(const char *choices, int k, const char **s, size_t *n)
{
    const char *p = choices;
    for (int i = 0; i < k; i++) {
        p = strchr(p, '|');
        if (!p)
            return -1;
        p++;
    }
    const char *e = strchr(p, '|');
    *s = p;
    *n = e ? (size_t)(e - p) : strlen(p);
    return 0;
}

/* "a, b or c" of CHOICES, into OUT. */
static void choice_list(const char *choices, char *out, size_t len)
{
    out[0] = '\0';
    const char *s;
    size_t n;
    int count = 0;
    while (choice_at(choices, count, &s, &n) == 0)
        count++;
    size_t used = 0;
    for (int k = 0; k < count && used < len; k++) {
        choice_at(choices, k, &s, &n);
        int w = snprintf(out + used, len - used, "%s%.*s", k == 0 ? "" : k == count - 1 ? " or " : ", ", (int)n, s);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* Parse setting I's string E into V. 0, or -1 after a line on ERR. */
static int parse_one(int i, const char *e, SettingValue *v, FILE *err)
{
    const SettingDef *d = &defs[i];
    v->text = e;
    if (d->kind == SK_TEXT || d->kind == SK_SYSTEM) {
        v->given = 1;
        return 0;
    }
    if (!*e) /* empty: not set */
        return 0;
    if (d->kind == SK_CHOICE) {
        const char *s;
        size_t n;
        for (int k = 0; choice_at(d->choices, k, &s, &n) == 0; k++)
            if (strlen(e) == n && strncmp(e, s, n) == 0) {
                v->given = 1;
                v->num = k;
                return 0;
            }
        char list[200];
        choice_list(d->choices, list, sizeof list);
        if (strchr(d->choices, '|'))
            fprintf(err, "vinterp: %s: '%s' is not one of %s\n", d->name, e, list);
        else
            fprintf(err, "vinterp: %s: '%s' is not '%s'\n", d->name, e, list);
        return -1;
    }
    int64_t x = 0;
    if (settings_parse_count(e, d->lo, d->hi, &x) < 0 || (d->kind == SK_POW2 && !is_pow2(x))) {
        if (d->kind == SK_FLAG)
            fprintf(err, "vinterp: %s: '%s' is not 0 or 1\n", d->name, e);
        else if (d->hi == INT64_MAX)
            fprintf(err, "vinterp: %s: '%s' is not a %s of at least %lld\n", d->name, e,
                    d->kind == SK_POW2 ? "power of two" : "count", (long long)d->lo);
        else
            fprintf(err, "vinterp: %s: '%s' is not a %s from %lld to %lld\n", d->name, e,
                    d->kind == SK_POW2 ? "power of two" : "count", (long long)d->lo, (long long)d->hi);
        return -1;
    }
    v->given = 1;
    v->num = x;
    return 0;
}

int settings_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!*s || s[strspn(s, "0123456789")] != '\0')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return -2;
    if (*end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int settings_load(FILE *err)
{
    SettingValue fresh[SET_COUNT];
    memset(fresh, 0, sizeof fresh);
    for (int i = 0; i < SET_COUNT; i++) {
        const char *e = getenv(defs[i].name);
        if (e && parse_one(i, e, &fresh[i], err) < 0)
            return -1;
    }
    memcpy(vals, fresh, sizeof vals);
    loaded = 1;
    return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_or_exit(void)
{
    if (!loaded && settings_load(stderr) < 0)
        exit(1);
}

static const SettingValue *get(SettingId id)
{
    pthread_once(&once, load_or_exit);
    return &vals[id];
}

int settings_given(SettingId id) { return get(id)->given; }

int64_t settings_count(SettingId id, int64_t dflt)
{
    const SettingValue *v = get(id);
    return v->given ? v->num : dflt;
}

int settings_choice(SettingId id, int dflt)
{
    const SettingValue *v = get(id);
    return v->given ? (int)v->num : dflt;
}

const char *settings_text(SettingId id)
{
    const SettingValue *v = get(id);
    return v->given ? v->text : NULL;
}

const char *settings_name(SettingId id) { return defs[id].name; }

/* KIND's values as --help shows them, into OUT. */
static void values_of(const SettingDef *d, char *out, size_t len)
{
    switch (d->kind) {
    case SK_FLAG:
        snprintf(out, len, "0|1");
        break;
    case SK_COUNT:
    case SK_POW2:
        if (d->hi == INT64_MAX)
            snprintf(out, len, "N >= %lld", (long long)d->lo);
        else
            snprintf(out, len, "N in %lld..%lld", (long long)d->lo, (long long)d->hi);
        if (d->kind == SK_POW2)
            snprintf(out + strlen(out), len - strlen(out), ", a power of two");
        break;
    case SK_CHOICE:
        snprintf(out, len, "%s", d->choices);
        break;
    default:
        snprintf(out, len, "TEXT");
    }
}

void settings_print_markdown(FILE *f)
{
    fprintf(f, "# vinterp's settings\n\n"
               "Generated by `vinterp --settings` from `runtime/core/settings.h`; `tests/run_cli.py` checks\n"
               "that this file is its output. A malformed value stops the run at start-up with one line\n"
               "naming the variable and the value. Set to the empty string, a variable counts as not set\n"
               "(but for TEXT). \"(tests)\": for the test suite only.\n\n"
               "| Variable | Values | Default | What it does |\n|---|---|---|---|\n");
    for (int i = 0; i < SET_COUNT; i++) {
        const SettingDef *d = &defs[i];
        char v[200];
        values_of(d, v, sizeof v);
        for (char *q = v; *q; q++)
            if (*q == '|')
                *q = '/';
        fprintf(f, "| `%s` | %s | %s | %s |\n", d->name, d->kind == SK_SYSTEM ? "the system's" : v,
                d->dflt ? d->dflt : "", d->doc);
    }
}

void settings_print(FILE *f, int tests)
{
    fprintf(f, "Environment variables (a bad value stops the run with a message naming it):\n");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            fprintf(f, "Read from the system:\n");
        for (int i = 0; i < SET_COUNT; i++) {
            const SettingDef *d = &defs[i];
            if ((d->kind == SK_SYSTEM) != pass || (!tests && strncmp(d->doc, "(tests)", 7) == 0))
                continue;
            char vals_s[200];
            values_of(d, vals_s, sizeof vals_s);
            fprintf(f, "  %s=%s\n      %s", d->name, vals_s, d->doc);
            if (d->dflt)
                fprintf(f, " (default: %s)", d->dflt);
            fprintf(f, "\n");
        }
    }
}
