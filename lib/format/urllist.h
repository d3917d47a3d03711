/*
 * urllist.h - reading a URL list (`pack --from-urls`): the txt, csv, tsv
 * and jsonl files img2dataset reads, one row at a time in bounded memory,
 * whatever the list's length.  Every byte is untrusted: a row that cannot
 * be parsed (a line past the cap, a JSON line that is not an object, a
 * missing URL) is handed out as a row with an error, so that row numbers,
 * and the sample keys made from them, stay those of the input.  Never
 * installed.
 */
#ifndef SK_FORMAT_URLLIST_H
#define SK_FORMAT_URLLIST_H

#include "core/internal.h"

enum sk_urllist_format {
    SK_URLLIST_TXT = 1, /* one URL a line: column "url" */
    SK_URLLIST_CSV,     /* RFC 4180, a header row naming the columns */
    SK_URLLIST_TSV,     /* the same with tabs */
    SK_URLLIST_JSONL,   /* one JSON object a line */
};

/* The format a list's name implies (.txt, .csv, .tsv, .jsonl, .json
 * lines), or 0 when its extension says nothing. */
int sk_urllist_format_of(const char *name);
/* "txt", "csv", "tsv", "jsonl" -> the format, 0 for anything else. */
int sk_urllist_format_parse(const char *s);

/* Where the list's bytes come from: up to cap bytes into buf, *got = 0
 * at the end.  A local file, stdin or an object stream. */
typedef int (*sk_urllist_read_fn)(void *ctx, void *buf, size_t cap, size_t *got,
                                  sk_error *err);

typedef struct sk_urllist_opts {
    int format;                /* SK_URLLIST_* */
    const char *url_col;       /* NULL: "url" */
    const char *caption_col;   /* NULL: no caption */
    const char *const *extra;  /* further columns kept with each row */
    size_t nextra;
    size_t max_row;            /* bytes a row may hold; 0: 1 MiB */
} sk_urllist_opts;

/* One row.  Pointers are into the reader and last until the next call.
 * A value is NULL when the row does not have it (a short CSV row, a JSON
 * null or missing field).  error non-NULL: the row could not be read as
 * one (then url and the rest are NULL); it still has its number. */
typedef struct sk_url_row {
    uint64_t row; /* 0-based, the header and blank lines not counted */
    const char *url, *caption;
    size_t url_len, caption_len;
    const char **extra; /* nextra values */
    size_t *extra_len;
    const char *error;
} sk_url_row;

typedef struct sk_urllist sk_urllist;

/* Opens a reader over read(ctx); name is the list's name for errors.  A
 * CSV or TSV list's header is read here: a column asked for that it does
 * not have is SK_E_USAGE naming the column and the list. */
int sk_urllist_open(sk_urllist **out, sk_urllist_read_fn read, void *ctx, const char *name,
                    const sk_urllist_opts *o, sk_error *err);
/* 1 with the next row, 0 at the end, < 0 when the list cannot be read on
 * (its source failed, or memory ran out). */
int sk_urllist_next(sk_urllist *l, sk_url_row *row, sk_error *err);
void sk_urllist_close(sk_urllist *l);

#endif
