/*
 * shard_filter.c - the filters of a `shard` run that decide which members
 * and samples are kept (--select, --drop, --rename, --keys, --part).  It
 * calls nothing of the engine: the input files above it (shard_read.c,
 * shard_direct.c) call it, never the other way round.
 */
#include "tools/shard_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ --keys */

static int keyset_add(struct keyset *k, const char *s, size_t n, sk_error *err)
{
    if ((k->n + 1) * 2 > k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 1024;
        char **ns = calloc(nc, sizeof *ns);
        SK_FAIL_IF(!ns, err, SK_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->slot[i]) continue;
            size_t j = sk_fnv1a64(k->slot[i], strlen(k->slot[i])) & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = k->slot[i];
        }
        free(k->slot);
        k->slot = ns;
        k->cap = nc;
    }
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return SK_OK;
        j = (j + 1) & (k->cap - 1);
    }
    SK_FAIL_IF(!(k->slot[j] = strndup(s, n)), err, SK_E_NOMEM, "out of memory");
    k->n++;
    return SK_OK;
}

static int keyset_has(const struct keyset *k, const char *s, size_t n)
{
    if (!k->cap) return 0;
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return 1;
        j = (j + 1) & (k->cap - 1);
    }
    return 0;
}

void sk_shard_run_keyset_free(struct keyset *k)
{
    for (size_t i = 0; i < k->cap; i++) free(k->slot[i]);
    free(k->slot);
}

int sk_shard_run_load_keys(sk_shard_run *r, const char *path, sk_error *err)
{
    sk_place_in *in; /* a local file, or s3:// and http(s):// streamed */
    SK_GUARD(sk_place_in_open(&in, path, r->o->s3, err));
    FILE *f = sk_place_in_file(in);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = SK_OK;
    while (!rc && (n = getline(&line, &cap, f)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n) rc = keyset_add(&r->in->keys, line, (size_t)n, err);
    }
    if (!rc && ferror(f)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", path);
    free(line);
    return sk_place_in_close(in, rc, err);
}

/* ---------------------------------------------------------------- filters */

static int ext_in(const char *e, size_t n, const char *const *list, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (!sk_ext_cmp(e, n, list[i], strlen(list[i]))) return (int)i + 1;
    return 0;
}

/* Decides whether a member with extension e is kept, and its output
 * extension (*out, *out_len). */
int sk_shard_run_keep_member(const sk_shard_run *r, const char *e, size_t n, const char **out, size_t *out_len)
{
    const sk_shard_options *o = r->o;
    if (o->nselect && !ext_in(e, n, o->select, o->nselect)) return 0;
    if (o->ndrop && ext_in(e, n, o->drop, o->ndrop)) return 0;
    int i = ext_in(e, n, o->rename_from, o->nrename);
    *out = i ? o->rename_to[i - 1] : e;
    *out_len = i ? strlen(o->rename_to[i - 1]) : n;
    return 1;
}

int sk_shard_run_keep_sample(const sk_shard_run *r, const char *key, size_t klen)
{
    if (r->o->keys_file && !keyset_has(&r->in->keys, key, klen)) return 0;
    /* --part I/N: the sample's part depends on its key alone (format/part.c) */
    if (r->o->parts && sk_part_of(key, klen, r->o->parts) != r->o->part) return 0;
    return 1;
}
