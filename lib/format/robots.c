/*
 * robots.c - X-Robots-Tag and Retry-After, as a URL-list download reads
 * them (robots.h).  Pure functions over the header's bytes, so the fuzz
 * target (fuzz/fuzz_robots.c) can reach every path.
 */
#include "format/robots.h"

#include <ctype.h>
#include <stdio.h>
#include <time.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* p..e trimmed of spaces at both ends */
static void trim(const char **p, const char **e)
{
    while (*p < *e && is_space(**p)) (*p)++;
    while (*e > *p && is_space((*e)[-1])) (*e)--;
}

static int eq_nocase(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn) return 0;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
    return 1;
}

/* whether d (n bytes, trimmed) is one of the comma-separated list */
static int listed(const char *d, size_t n, const char *list)
{
    if (!n || !list) return 0;
    const char *p = list;
    while (*p) {
        const char *c = strchr(p, ',');
        const char *e = c ? c : p + strlen(p), *s = p;
        trim(&s, &e);
        if (eq_nocase(s, (size_t)(e - s), d, n)) return 1;
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

int sk_robots_disallowed(const char *v, size_t n, const char *token, const char *directives)
{
    if (!v || !n) return 0;
    const char *end = v + n, *colon = memchr(v, ':', n), *p = v;
    if (colon) { /* "googlebot: noindex": for that agent only */
        const char *ts = v, *te = colon;
        trim(&ts, &te);
        if (!token || !*token || !eq_nocase(ts, (size_t)(te - ts), token, strlen(token))) return 0;
        p = colon + 1;
    }
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *e = c ? c : end, *s = p;
        trim(&s, &e);
        if (listed(s, (size_t)(e - s), directives)) return 1;
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

static int month_of(const char *m)
{
    static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int i = 0; i < 12; i++)
        if (!strncmp(names + 3 * i, m, 3)) return i;
    return -1;
}

long sk_retry_after_parse(const char *v, size_t n, int64_t now)
{
    const char *p = v, *e = v + n;
    if (!v) return -1;
    trim(&p, &e);
    if (p == e) return -1;
    if (isdigit((unsigned char)*p)) {
        long s = 0;
        for (; p < e; p++) {
            if (!isdigit((unsigned char)*p)) return -1;
            if (s < 86400) s = s * 10 + (*p - '0');
        }
        return s > 86400 ? 86400 : s;
    }
    /* IMF-fixdate, the form RFC 9110 says senders use:
     * "Sun, 06 Nov 1994 08:49:37 GMT" (29 bytes) */
    char buf[40];
    size_t len = (size_t)(e - p);
    if (len != 29) return -1;
    memcpy(buf, p, len);
    buf[len] = 0;
    int day, year, hh, mm, ss;
    char mon[4], tz[4];
    if (sscanf(buf + 5, "%2d %3s %4d %2d:%2d:%2d %3s", &day, mon, &year, &hh, &mm, &ss, tz) != 7 ||
        strcmp(tz, "GMT") || month_of(mon) < 0 || day < 1 || day > 31 || hh > 23 || mm > 59 ||
        ss > 60 || year < 1970)
        return -1;
    struct tm tm = {.tm_sec = ss, .tm_min = mm, .tm_hour = hh, .tm_mday = day,
                    .tm_mon = month_of(mon), .tm_year = year - 1900};
    int64_t at = (int64_t)timegm(&tm), d = at - now;
    return d < 0 ? 0 : d > 86400 ? 86400 : (long)d;
}
