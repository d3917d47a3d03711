/*
 * emit.c - the shard emitter's rules (emit.h): one copy of each, for pack,
 * the streaming sample writer and shard alike.
 */
#include "io/emit.h"
#include "format/tar.h"
#include "io/io.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

int sk_emit_check_suffix(const char *pattern, int compress_level, sk_error *err)
{
    static const char *const unwritten[] = {".gz", ".tgz", ".bz2", ".xz"};
    if (!pattern || !strcmp(pattern, "-")) return SK_OK;
    SK_FAIL_IF(!compress_level && ends_with(pattern, ".zst"), err, SK_E_USAGE,
               "%s: the names end in .zst but compression is off (--compress none, "
               "compress_level 0): readers would take plain tar for zstd", pattern);
    for (size_t i = 0; i < sizeof unwritten / sizeof *unwritten; i++)
        SK_FAIL_IF(ends_with(pattern, unwritten[i]), err, SK_E_USAGE,
                   "%s: shardkit writes .tar shards (or .tar.zst with compression), not %s",
                   pattern, unwritten[i] + 1);
    return SK_OK;
}

int sk_emit_check_places(const char *pattern, const char *manifest, const char *what,
                         sk_error *err)
{
    char name[64];
    if (pattern) {
        snprintf(name, sizeof name, "%s: the output pattern", what);
        SK_GUARD(sk_place_check(pattern, SK_PLACE_WRITE | SK_PLACE_STREAM | SK_PLACE_S3_OK, name,
                                NULL, err));
    }
    if (manifest) {
        snprintf(name, sizeof name, "%s: the manifest", what);
        SK_GUARD(sk_place_check(manifest, SK_PLACE_WRITE | SK_PLACE_S3_OK, name, NULL, err));
    }
    return SK_OK;
}

void sk_emit_lock_path(const char *pattern, const char *manifest, char *buf, size_t cap)
{
    char mdir[4200]; /* the lock is the manifest: one rule for where it lies */
    sk_emit_manifest_path(pattern, manifest, buf, cap, mdir, sizeof mdir);
}

/* The directory of path (without making it): whether it exists. */
static int dir_exists(const char *path, int create, sk_error *err, int *rc)
{
    char *dir = sk_dir_of(path);
    struct stat st;
    *rc = SK_OK;
    if (!dir) {
        *rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        return 0;
    }
    int there = stat(dir, &st) == 0;
    if (!there && create) there = !(*rc = sk_mkdirs(dir, err));
    free(dir);
    return there;
}

int sk_run_lock_take(sk_run_lock *l, const char *pattern, const char *manifest, const char *what,
                     int create, sk_error *err)
{
    if (sk_is_s3_url(pattern) || sk_is_s3_url(manifest) || !strcmp(pattern, "-")) return SK_OK;
    int rc = SK_OK;
    if (l->mfd < 0) {
        sk_emit_lock_path(pattern, manifest, l->mpath, sizeof l->mpath);
        if (!manifest) SK_GUARD(sk_out_check_regular(l->mpath, err));
        if (dir_exists(l->mpath, create, err, &rc)) SK_GUARD(sk_out_lock(l->mpath, what, &l->mfd, err));
        SK_GUARD(rc);
    }
    /* the shard names' lock: ".PATTERN.lock" beside the shards, unless the
     * pattern's number is in its directory part (shards in many places) */
    const char *slash = strrchr(pattern, '/');
    if (l->pfd < 0 && !(slash && memchr(pattern, '%', (size_t)(slash - pattern)))) {
        snprintf(l->pattern, sizeof l->pattern, "%s", pattern);
        if (dir_exists(pattern, create, err, &rc)) SK_GUARD(sk_out_lock(pattern, what, &l->pfd, err));
        SK_GUARD(rc);
    }
    return SK_OK;
}

void sk_run_lock_release(sk_run_lock *l)
{
    if (l->pfd >= 0) sk_out_unlock(l->pattern, l->pfd);
    if (l->mfd >= 0) sk_out_unlock(l->mpath, l->mfd);
    l->pfd = l->mfd = -1;
}

int sk_run_files_add(sk_run_files *f, const char *path, const char *what, int dir, sk_error *err)
{
    if (!path || !strcmp(path, "-") || strstr(path, "://")) return SK_OK; /* not a local file */
    SK_GUARD(sk_grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v, err));
    SK_FAIL_IF(!(f->v[f->n].path = strdup(path)), err, SK_E_NOMEM, "out of memory");
    f->v[f->n].what = what;
    f->v[f->n++].dir = dir;
    return SK_OK;
}

int sk_run_files_check(const sk_run_files *f, sk_error *err)
{
    for (size_t o = 0; o < f->n; o++) {
        if (!f->v[o].what) continue;
        sk_fileids one = {0};
        for (size_t i = 0; i < f->n; i++) {
            const struct sk_run_file *in = &f->v[i];
            if (in->what) continue;
            SK_FAIL_IF(in->dir && sk_path_within(f->v[o].path, in->path), err, SK_E_USAGE,
                       "%s (%s) is inside the input directory %s: it would be packed, or replace "
                       "an input; write it outside", f->v[o].path, f->v[o].what, in->path);
            if (!in->dir && sk_fileids_add(&one, in->path, err)) return sk_fileids_free(&one), SK_E_NOMEM;
        }
        int rc = sk_fileids_refuse(&one, f->v[o].path, f->v[o].what, err);
        sk_fileids_free(&one);
        SK_GUARD(rc);
    }
    return SK_OK;
}

void sk_run_files_free(sk_run_files *f)
{
    for (size_t i = 0; i < f->n; i++) free(f->v[i].path);
    free(f->v);
    *f = (sk_run_files){0};
}

void sk_emit_manifest_path(const char *pattern, const char *manifest, char *mpath, size_t mcap,
                           char *mdir, size_t dcap)
{
    const char *slash = strrchr(pattern, '/');
    snprintf(mdir, dcap, "%.*s", slash ? (int)(slash - pattern) : 0, pattern);
    if (manifest) {
        snprintf(mpath, mcap, "%s", manifest);
        const char *ms = strrchr(mpath, '/');
        snprintf(mdir, dcap, "%.*s", ms ? (int)(ms - mpath) : 0, mpath);
    } else {
        snprintf(mpath, mcap, "%s%smanifest.json", mdir, mdir[0] ? "/" : "");
    }
}

int sk_emit_index_path(const char *shard, char *buf, size_t cap)
{
    return snprintf(buf, cap, "%s.idx", shard) >= (int)cap ? -1 : 0;
}

/* Relative to the manifest's directory, wherever the shard is (core). */
#define shard_url sk_path_rel

int sk_emit_manifest_add(sk_manifest *man, const char *path, const char *mdir,
                         const sk_index_shard_info *info, uint64_t samples, int part,
                         const sk_key_range *keys, sk_error *err)
{
    char ipath[4200], url[4200], iurl[4200];
    SK_FAIL_IF(sk_emit_index_path(path, ipath, sizeof ipath) ||
                   shard_url(path, mdir, url, sizeof url) ||
                   shard_url(ipath, mdir, iurl, sizeof iurl),
               err, SK_E_USAGE, "%s: name too long", path);
    sk_manifest_shard ms = {0};
    ms.url = url;
    ms.index_url = iurl;
    ms.bytes = info->size;
    ms.crc32c = info->crc32c;
    ms.part = part;
    ms.samples = samples;
    SK_GUARD(sk_manifest_add_shard(man, &ms, err));
    if (!keys || !keys->first) return SK_OK;
    return sk_manifest_set_key_range(man, man->nshards - 1, keys->first, keys->first_len,
                                     keys->last, keys->last_len, err);
}

int sk_emit_index_member(sk_shard_out *out, sk_manifest *exts, const char *e, size_t el,
                         uint64_t data_offset, uint64_t size, uint32_t header_len, uint32_t crc,
                         sk_error *err)
{
    char ext[SK_EXT_LOWER_MAX(SK_TAR_NAME_MAX)];
    SK_FAIL_IF(el > SK_TAR_NAME_MAX, err, SK_E_INPUT, "extension longer than %d bytes",
               SK_TAR_NAME_MAX);
    el = sk_ext_lower(e, el, ext); /* as WebDataset's str.lower() */
    SK_GUARD(sk_index_add_member(out->index, ext, el, data_offset, size, header_len, crc, err));
    return sk_manifest_count_ext(exts, ext, el, 1, err);
}

int64_t sk_emit_file_crc32c(const char *path, uint64_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned char *buf = malloc(1 << 20);
    uint32_t crc = 0;
    uint64_t got = 0;
    ssize_t r = 0;
    while (buf && (r = read(fd, buf, 1 << 20)) > 0) {
        crc = sk_crc32c(crc, buf, (size_t)r);
        got += (uint64_t)r;
    }
    free(buf);
    close(fd);
    return r < 0 || got != size ? -1 : (int64_t)crc;
}

int sk_emit_shard_sound(sk_s3 *s3, const char *path, sk_index **out)
{
    char ipath[4200];
    struct stat st;
    sk_index *ix = NULL;
    *out = NULL;
    if (sk_is_s3_url(path)) return sk_s3_shard_sound(s3, path, out);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || sk_emit_index_path(path, ipath, sizeof ipath) ||
        sk_index_open(&ix, ipath, 0, NULL) != SK_OK)
        return 0;
    const sk_index_shard_info *info = sk_index_shard(ix);
    /* the bytes must still be the ones the index was made for */
    if (info->size != (uint64_t)st.st_size || !sk_index_sample_count(ix) ||
        sk_emit_file_crc32c(path, info->size) != (int64_t)info->crc32c) {
        sk_index_close(ix);
        return 0;
    }
    *out = ix;
    return 1;
}

int sk_emit_member_matches(const sk_index *ix, uint64_t member, const char *e, size_t el,
                           uint64_t size, int64_t crc)
{
    sk_member_ref m;
    char ext[SK_EXT_LOWER_MAX(SK_TAR_NAME_MAX)];
    if (el > SK_TAR_NAME_MAX || sk_index_member(ix, member, &m, NULL) || m.size != size) return 0;
    el = sk_ext_lower(e, el, ext); /* as the record was made (sk_emit_index_member) */
    if (el != m.ext_len || memcmp(ext, m.ext, el)) return 0;
    return crc < 0 || (!(sk_index_shard(ix)->flags & SK_INDEX_NO_CRC) && m.crc32c == (uint32_t)crc);
}

int sk_emit_shard_options_match(const char *path, const sk_index *ix, int compress_level,
                                uint64_t mtime)
{
    const sk_index_shard_info *info = sk_index_shard(ix);
    sk_member_ref m;
    if (!(info->flags & SK_INDEX_ZSTD) != !compress_level) return 0;
    if ((info->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) || sk_index_member(ix, 0, &m, NULL))
        return 1; /* compressed: the members' bytes are what is compared */
    /* --mtime is in every header and in no member's bytes: the first
     * member's ustar header (the 512 bytes before its data) says it */
    unsigned char h[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 && m.data_offset >= 512 ? pread(fd, h, 512, (off_t)(m.data_offset - 512)) : -1;
    if (fd >= 0) close(fd);
    uint64_t t;
    return got == 512 && !sk_tar_number(h + 136, 12, &t) && t == mtime;
}
