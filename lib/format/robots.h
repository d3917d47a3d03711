/*
 * robots.h - the two response headers a URL-list download obeys
 * (robots.c): X-Robots-Tag, whose directives may forbid taking an image
 * (img2dataset's --disallowed-header-directives), and Retry-After, which
 * says how long a 429 or 503 asks us to wait.  Both come from untrusted
 * servers: any bytes, any length, never read past their end.  Never
 * installed.
 */
#ifndef SK_FORMAT_ROBOTS_H
#define SK_FORMAT_ROBOTS_H

#include "core/internal.h"

/* Whether one X-Robots-Tag value (v, n bytes) forbids use: the value is
 * "[token:] directive, directive, ...", and it applies when it names no
 * token, or token (case-insensitively; NULL or "": no token of ours).
 * directives is a comma-separated list ("noai,noimageai"); a directive
 * matches when equal to one of them, case-insensitively, spaces trimmed.
 * As img2dataset reads the header.  1 forbidden, 0 not. */
int sk_robots_disallowed(const char *v, size_t n, const char *token, const char *directives);

/* A Retry-After value (delta-seconds, or an HTTP-date taken against now,
 * seconds since the epoch) as seconds to wait, clamped to 0..86400; -1
 * when it is neither. */
long sk_retry_after_parse(const char *v, size_t n, int64_t now);

#endif
