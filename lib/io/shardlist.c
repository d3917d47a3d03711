/*
 * shardlist.c - what a dataset directory holds, for the modules that open
 * one (tools/dataset_open.c's sk_dataset, reader.c's sk_reader): its manifest.json if
 * it has one, else the sorted paths of its shard files.  Dot files (our
 * temporary .NAME.tmp files among them) are never shards.
 */
#include "io/io.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sk_shard_list_dir(const char *dir, int (*keep)(const char *name, const char *path),
                      char **manifest, char ***names, size_t *count, sk_error *err)
{
    *manifest = NULL;
    *names = NULL;
    *count = 0;
    char *mf;
    SK_FAIL_IF(asprintf(&mf, "%s/manifest.json", dir) < 0, err, SK_E_NOMEM, "out of memory");
    if (access(mf, F_OK) == 0) {
        *manifest = mf;
        return SK_OK;
    }
    free(mf);
    DIR *d = opendir(dir);
    SK_FAIL_IF(!d, err, SK_E_IO, "%s: cannot list: %s", dir, strerror(errno));
    char **list = NULL;
    size_t n = 0, cap = 0;
    int rc = SK_OK;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p;
        if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) { rc = SK_E_NOMEM; break; }
        if (!keep(de->d_name, p)) { free(p); continue; }
        if (sk_grow((void **)&list, &cap, n + 1, sizeof *list, NULL)) { free(p); rc = SK_E_NOMEM; break; }
        list[n++] = p;
    }
    closedir(d);
    if (rc) {
        sk_shard_list_free(list, n);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    if (n) qsort(list, n, sizeof *list, name_cmp);
    *names = list;
    *count = n;
    return SK_OK;
}

void sk_shard_list_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

int sk_is_shard_name(const char *n)
{
    static const char *const ends[] = {".tar", ".tar.zst", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"};
    size_t len = strlen(n);
    for (size_t i = 0; i < SK_ARRAY_LEN(ends); i++) {
        size_t k = strlen(ends[i]);
        if (len > k && !strcmp(n + len - k, ends[i])) return 1;
    }
    return 0;
}
