/*
 * stats.h - what `stats` and `serve` share inside the library: the numbers
 * of a dataset as one JSON document (stats.c builds it; the terminal
 * table, the HTML page and the web viewer only render it), HTML text with
 * every byte from the dataset escaped, the SVG plots, and a JPEG's size
 * from its header alone.  Internal to libshardkit.
 */
#ifndef SK_STATS_H
#define SK_STATS_H

#include "core/internal.h"

#include <jansson.h>

struct sk_stats {
    json_t *doc; /* the schema of docs/stats.md */
};

/* printf onto b (SK_E_NOMEM on exhaustion). */
int sk_bufp(sk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes of untrusted text onto b as HTML: & < > " ' escaped, control
 * bytes and NUL shown as U+FFFD, so no byte of a key can open markup. */
int sk_html_esc(sk_buf *b, const char *s, size_t n);
/* The same for a NUL-terminated string. */
int sk_html_escs(sk_buf *b, const char *s);
/* Percent-encodes n bytes for a URL query value. */
int sk_url_esc(sk_buf *b, const char *s, size_t n);

/* The page body of a stats document (tables and inline SVG plots), for
 * the --html page and serve's dataset page.  shard_link: when set, each
 * shard's name links to "shard?i=N" (serve). */
int sk_stats_html_body(const json_t *doc, int shard_link, sk_buf *b);
/* The shared style sheet of the pages (no fonts or anything fetched). */
extern const char sk_stats_css[];

/* stats_render.c: what the renderers share.  A number of the document
 * (0 when absent); a byte count for people ("1.5 MB"). */
uint64_t sk_stats_num(const json_t *o, const char *k);
void sk_stats_human(char *out, size_t cap, uint64_t v);
/* An extension's size histogram (its "histogram" array): each bin's count
 * and label (the size it is below, or "more"), at most SK_STATS_BINS;
 * *max gets the largest count.  Returns the number of bins. */
#define SK_STATS_BINS 65
size_t sk_stats_bins(const json_t *hist, uint64_t *count, char (*label)[24], uint64_t *max);

/* A JPEG's width and height from its header (libjpeg-turbo's
 * jpeg_read_header, no decoding).  0: found; 1: the header runs past the
 * n bytes given (read more and call again); -1: not a JPEG, why says. */
int sk_jpeg_dims(const void *data, size_t n, unsigned *w, unsigned *h, char *why, size_t cap);

/* stats_jkeys.c: the --json-keys tally of .json members.  Each member's
 * bytes go to sk_jkeys_add (SK_OK, or SK_E_NOMEM; bytes that are not JSON
 * count as bad); members and skipped are the caller's counts; at most
 * SK_JKEYS_MAX distinct keys are kept, the rest counted in overflow. */
#define SK_JKEYS_MAX 256
typedef struct sk_jkeys {
    struct sk_jkey {
        char *name;
        uint64_t n, types[8]; /* by json_typeof */
    } *jk;
    size_t njk;
    uint64_t members, bad, skipped, top[8], overflow;
} sk_jkeys;
int sk_jkeys_init(sk_jkeys *t);
int sk_jkeys_add(sk_jkeys *t, const char *buf, size_t n);
/* The tally as the stats document's "json_keys" object (NULL: out of memory). */
json_t *sk_jkeys_json(const sk_jkeys *t);
void sk_jkeys_free(sk_jkeys *t);

#endif
