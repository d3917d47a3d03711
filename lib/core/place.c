/*
 * place.c - the one grammar of a place a user names (an input, an output,
 * a list, a manifest): a local path, '-' (standard input or output), an
 * s3:// URL, an http(s):// URL (read only), and nothing else.  Every
 * place-naming option of every tool goes through sk_place_check, so that
 * `-o gs://b/x-%03d.tar` is refused by name instead of becoming a local
 * folder "gs:/b/", and each option says the same thing about '-' and s3://.
 * The store asks the same question (sk_store_classify), so a library
 * caller meets the same rule; docs/places.md is the user's page of it.
 */
#include "core/internal.h"

#include <ctype.h>
#include <strings.h>
#include <stdio.h>

/* The length of "scheme" in "scheme://..." (RFC 3986's letters), else 0. */
static size_t scheme_len(const char *s)
{
    size_t i = 0;
    if (!isalpha((unsigned char)s[0])) return 0;
    while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.') i++;
    return !strncmp(s + i, "://", 3) ? i : 0;
}

/* "s3:", "http:" or "https:" (any case) not followed by "//": "s3:/b/k",
 * "s3:b/k", "http:/h/x", "s3:" alone.  A user who types one meant the URL
 * (a slash lost), not a local folder named "s3:": taken as a path it would
 * read nothing there, or write a folder "s3:" into the working directory.
 * Refused; a local name that begins so is written "./s3:...". */
static int lost_slash(const char *s)
{
    static const char *const ours[] = {"s3:", "http:", "https:"};
    for (size_t i = 0; i < SK_ARRAY_LEN(ours); i++) {
        size_t n = strlen(ours[i]);
        if (!strncasecmp(s, ours[i], n) && strncmp(s + n, "//", 2)) return (int)n;
    }
    return 0;
}

int sk_place_check(const char *place, unsigned flags, const char *what, int *kind, sk_error *err)
{
    int k = SK_PLACE_FILE;
    /* "pack -o 'x': why", or, asked without an option (the store), "x: why" */
    const char *w = what ? what : "", *q = what ? " '" : "", *qe = what ? "'" : "";
    SK_FAIL_IF(!place || !*place, err, SK_E_USAGE, "%s: an empty name", what ? what : "a place");
    size_t sl = scheme_len(place);
    int lost = lost_slash(place);
    if (!strcmp(place, "-")) {
        k = SK_PLACE_STDIO;
        SK_FAIL_IF(!(flags & SK_PLACE_STREAM), err, SK_E_USAGE,
                   "%s%s%s%s: %s", w, q, place, qe, flags & SK_PLACE_WRITE
                       ? "standard output cannot take what this writes (named files beside "
                         "each other): give a path"
                       : "standard input cannot be read here (this needs a file it can read "
                         "again or seek in): give a path");
    } else if (!strncmp(place, "pipe:", 5)) {
        return sk_error_set(err, SK_E_USAGE, "%s%s%s%s: pipe: runs a shell command, which shardkit "
                            "never does: run it yourself and pipe its output into '-'", w, q, place, qe);
    } else if (lost) {
        return sk_error_set(err, SK_E_USAGE, "%s%s%s%s: not a URL (%.*s// takes two slashes) and "
                            "not taken as a local path: a local file or folder whose name begins "
                            "'%.*s' is written './%s'", w, q, place, qe, lost, place, lost, place, place);
    } else if (sl == 2 && !strncasecmp(place, "s3", 2)) {
        k = SK_PLACE_S3;
        SK_FAIL_IF(!place[5] || place[5] == '/', err, SK_E_USAGE, "%s%s%s%s: an s3:// URL needs a "
                   "bucket (s3://BUCKET/KEY)", w, q, place, qe);
        SK_FAIL_IF(!(flags & SK_PLACE_S3_OK), err, SK_E_USAGE, "%s%s%s%s: s3:// is not taken here "
                   "yet: %s", w, q, place, qe, flags & SK_PLACE_WRITE
                       ? "write a local file, then `shardkit upload` it"
                       : "copy the object locally first (aws s3 cp)");
    } else if ((sl == 4 && !strncasecmp(place, "http", 4)) || (sl == 5 && !strncasecmp(place, "https", 5))) {
        k = SK_PLACE_HTTP;
        SK_FAIL_IF(flags & SK_PLACE_WRITE, err, SK_E_USAGE, "%s%s%s%s: http(s):// is read only: "
                   "write to a local path%s", w, q, place, qe, flags & SK_PLACE_S3_OK
                       ? " or s3:// (with --endpoint-url for another S3 service)" : "");
        SK_FAIL_IF(!(flags & SK_PLACE_HTTP_OK), err, SK_E_USAGE, "%s%s%s%s: http(s):// is not read "
                   "here: download it first (curl -O)", w, q, place, qe);
    } else if (sl == 4 && !strncasecmp(place, "file", 4)) {
        return sk_error_set(err, SK_E_USAGE, "%s%s%s%s: give the path itself (%s)", w, q, place, qe,
                            place + 7);
    } else if (sl) {
        return sk_error_set(err, SK_E_USAGE, "%s%s%s%s: %.*s:// is not a scheme shardkit reads or "
                            "writes (local paths, '-', s3:// and, for reading, http(s)://); an "
                            "S3-compatible store (GCS, R2, MinIO, Ceph) is s3:// with --endpoint-url",
                            w, q, place, qe, (int)sl, place);
    }
    if (kind) *kind = k;
    return SK_OK;
}
