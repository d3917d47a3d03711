/* sk_files.h - the unit tests' small files in a scratch directory: put one
 * (put_ok for a child process, where a cmocka assert would run the rest of
 * the tests there), and ask whether a name is there (a link counts, never
 * followed).  Include after cmocka.h. */
#ifndef SK_FILES_H
#define SK_FILES_H

#include <stdio.h>
#include <sys/stat.h>

/* 0 when dir/name was written with text, else -1. */
static inline int put_ok(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f) ? -1 : 0;
}

static inline void put(const char *dir, const char *name, const char *text)
{
    assert_int_equal(put_ok(dir, name, text), 0);
}

static inline int there(const char *dir, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

#endif
