/*
 * pack_out.c - what pack and the streaming sample writer share about their
 * output (see pack_out.h): one copy of each rule, so the two cannot drift
 * apart and write different bytes for the same samples.
 */
#include "pack/pack_out.h"
#include "format/format.h"
#include "format/tar.h"

#include "io/io.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void sk_pack_warn_oversized(const sk_pack_options *o, const char *name, uint64_t b)
{
    uint64_t max = o->max_size ? o->max_size : SK_PACK_DEFAULT_MAX_SIZE;
    if (b + SK_PACK_EOA <= max || !o->warn) return;
    char msg[SK_ERROR_MAX + 128]; /* as sk_vwarnf */
    snprintf(msg, sizeof msg, "sample of %s is %llu bytes, more than --max-size alone; it gets a "
             "shard of its own", name, (unsigned long long)b);
    o->warn(o->ctx, msg);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

int sk_pack_check_suffix(const char *pattern, int compress_level, sk_error *err)
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

/* The pattern's basename only: no machine paths in the manifest. */
char *sk_pack_options_json(const char *pattern_tmpl, const sk_pack_options *po)
{
    const char *base = strrchr(pattern_tmpl, '/');
    base = base ? base + 1 : pattern_tmpl;
    char z[32];
    snprintf(z, sizeof z, "zstd:%d", po->compress_level);
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "pattern", sk_json_str(base)) ||
        json_object_set_new(o, "start", sk_json_u64(po->start)) ||
        json_object_set_new(o, "max_size", sk_json_u64(po->max_size ? po->max_size
                                                                    : SK_PACK_DEFAULT_MAX_SIZE)) ||
        json_object_set_new(o, "max_count", sk_json_u64(po->max_count)) ||
        json_object_set_new(o, "order", json_string(po->shuffle ? "shuffle" : "key")) ||
        json_object_set_new(o, "seed", sk_json_u64(po->shuffle ? po->seed : 0)) ||
        json_object_set_new(o, "mtime", sk_json_u64(po->mtime)) ||
        json_object_set_new(o, "compress", po->compress_level ? json_string(z) : json_null())) {
        json_decref(o);
        return NULL;
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

void sk_pack_lock_path(const char *pattern, const char *manifest, char *buf, size_t cap)
{
    if (manifest) {
        snprintf(buf, cap, "%s", manifest);
    } else {
        const char *slash = strrchr(pattern, '/');
        snprintf(buf, cap, "%.*s%smanifest.json", slash ? (int)(slash - pattern) : 0, pattern,
                 slash ? "/" : "");
    }
}

void sk_pack_manifest_path(const char *pattern, const char *manifest, char *mpath, size_t mcap,
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

int sk_pack_index_path(const char *shard, char *buf, size_t cap)
{
    return snprintf(buf, cap, "%s.idx", shard) >= (int)cap ? -1 : 0;
}

/* Relative to the manifest when the shard sits under its directory;
 * otherwise the path as given. */
static int shard_url(const char *shard, const char *manifest_dir, char *buf, size_t cap)
{
    size_t dl = strlen(manifest_dir);
    const char *rel = shard;
    if (dl && !strncmp(shard, manifest_dir, dl) && shard[dl] == '/') rel = shard + dl + 1;
    else if (!dl && !strncmp(shard, "./", 2)) rel = shard + 2;
    return snprintf(buf, cap, "%s", rel) >= (int)cap ? -1 : 0;
}

int sk_pack_manifest_add(sk_manifest *man, const char *path, const char *mdir,
                         const sk_index_shard_info *info, uint64_t samples, int part,
                         sk_error *err)
{
    char ipath[4200], url[4200], iurl[4200];
    SK_FAIL_IF(sk_pack_index_path(path, ipath, sizeof ipath) ||
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
    return sk_manifest_add_shard(man, &ms, err);
}

int sk_pack_index_member(sk_shard_out *out, sk_manifest *exts, const char *e, size_t el,
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

int64_t sk_pack_file_crc32c(const char *path, uint64_t size)
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

int sk_pack_shard_sound(sk_s3 *s3, const char *path, sk_index **out)
{
    char ipath[4200];
    struct stat st;
    sk_index *ix = NULL;
    *out = NULL;
    if (sk_is_s3_url(path)) return sk_s3_shard_sound(s3, path, out);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || sk_pack_index_path(path, ipath, sizeof ipath) ||
        sk_index_open(&ix, ipath, 0, NULL) != SK_OK)
        return 0;
    const sk_index_shard_info *info = sk_index_shard(ix);
    /* the bytes must still be the ones the index was made for */
    if (info->size != (uint64_t)st.st_size || !sk_index_sample_count(ix) ||
        sk_pack_file_crc32c(path, info->size) != (int64_t)info->crc32c) {
        sk_index_close(ix);
        return 0;
    }
    *out = ix;
    return 1;
}
