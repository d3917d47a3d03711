/*
 * get.c - `shardkit get`: one sample out of a dataset by key or by global
 * ordinal, through the sidecar indexes (sk_dataset_*), written to stdout,
 * a file, a directory (one file per member) or a one-sample tar.
 */
#include "cmd.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit get [options] DATASET KEY\n"
    "       shardkit get [options] DATASET '#ORDINAL'\n"
    "\n"
    "DATASET is a manifest.json, a directory (its manifest.json, or its shards\n"
    "with .idx sidecars) or one shard, local or s3:// (s3://bucket/prefix/ means\n"
    "its manifest.json; a member is then one ranged GET).  KEY is a sample key;\n"
    "#N is the N-th sample of the dataset, counting from 0.\n"
    "\n"
    "  -e, --ext EXT       only the member with this extension\n"
    "  -o, --output PATH   a file (one member, or --tar) or a directory (all\n"
    "                      members, named KEYBASENAME.EXT); default stdout;\n"
    "                      s3://BUCKET/KEY (a prefix for all members) is one PUT\n"
    "      --tar           write the sample as a one-sample tar\n"
    "      --trust-index   skip the index body checksum (open in O(1))\n"
    "      --json          print where the sample is on stdout, as one JSON object\n"
    "                      (key, ordinal, shard, offset, span, members: ext, size,\n"
    "                      crc32c); no member bytes unless -o or --tar is given\n"
    "  -q, --quiet         print nothing but errors (get prints no more than that)\n"
    "  -h, --help          show this help\n"
    "S3 (for an s3:// DATASET or -o):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Every member read is checked against its CRC32C in the index.\n"
    "Exit status: 0 written, 1 not found or damaged data, 2 usage.\n";


/* --json: the sample's place and members, as the index records them; key
 * and extensions are bytes from the index, so not checked as UTF-8 */
static int print_json(sk_dataset *ds, const sk_hit *h, sk_error *err)
{
    json_t *o = json_object(), *ms = json_array();
    json_object_set_new(o, "key", json_stringn_nocheck(h->sample.key, h->sample.key_len));
    json_object_set_new(o, "ordinal", json_integer((json_int_t)h->global_ordinal));
    json_object_set_new(o, "shard", json_string_nocheck(h->shard_path));
    json_object_set_new(o, "offset", json_integer((json_int_t)h->sample.offset));
    json_object_set_new(o, "span", json_integer((json_int_t)h->sample.span));
    for (uint32_t i = 0; i < h->sample.member_count; i++) {
        sk_member_ref m;
        int rc = sk_dataset_member(ds, h, i, &m, err);
        if (rc) return json_decref(o), json_decref(ms), rc;
        char crc[9];
        snprintf(crc, sizeof crc, "%08x", m.crc32c);
        json_t *j = json_object();
        json_object_set_new(j, "ext", json_stringn_nocheck(m.ext, m.ext_len));
        json_object_set_new(j, "size", json_integer((json_int_t)m.size));
        json_object_set_new(j, "crc32c", json_string(crc));
        json_array_append_new(ms, j);
    }
    json_object_set_new(o, "members", ms);
    json_dumpf(o, stdout, JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(o);
    return SK_OK;
}

/* Writes buf to path (NULL: stdout) through sk_place_out: a temporary name
 * and a rename, so a file that was there survives a failure; devices in
 * place; an s3:// object in one PUT, only once it is whole. */
static int write_file(const char *path, const void *buf, size_t n, sk_s3 *s3, sk_error *err)
{
    sk_place_out *o;
    int rc = sk_place_out_open(&o, path, s3, err);
    if (rc) return rc;
    const unsigned char *p = buf;
    while (n && !rc) {
        ssize_t w = write(sk_place_out_fd(o), p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = sk_error_set(err, SK_E_IO, "%s: write failed: %s", sk_place_out_name(o), strerror(errno));
        else p += w, n -= (size_t)w;
    }
    if (rc) {
        sk_place_out_abort(o);
        return rc;
    }
    return sk_place_out_commit(o, err);
}

/* Bytes a terminal would take as control sequences (a JPEG, a tar, an
 * .npy): anything below 0x20 but tab and line ends, and DEL.  Text members
 * (.txt, .json, .cls) print. */
static int binary(const unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if ((p[k] < 0x20 && p[k] != '\t' && p[k] != '\n' && p[k] != '\r') || p[k] == 0x7f) return 1;
    return 0;
}

static int to_terminal(const char *path)
{
    return (!path || !strcmp(path, "-")) && isatty(STDOUT_FILENO);
}

static int write_member(sk_dataset *ds, const sk_hit *h, uint32_t i, const char *path,
                        sk_s3 *s3, sk_error *err)
{
    sk_member_ref m;
    int rc = sk_dataset_member(ds, h, i, &m, err);
    if (rc) return rc;
    void *buf = malloc(m.size ? (size_t)m.size : 1);
    if (!buf) return sk_error_set(err, SK_E_NOMEM, "out of memory for %llu bytes",
                                  (unsigned long long)m.size);
    rc = sk_dataset_read(ds, h, i, buf, (size_t)m.size, err);
    if (!rc && to_terminal(path) && binary(buf, (size_t)m.size))
        rc = sk_error_set(err, SK_E_USAGE, "stdout is a terminal and member '%.*s' of sample "
                          "'%.*s' is binary (%llu bytes): redirect it, or use -o FILE",
                          (int)m.ext_len, m.ext, (int)h->sample.key_len, h->sample.key,
                          (unsigned long long)m.size);
    if (!rc) rc = write_file(path, buf, (size_t)m.size, s3, err);
    free(buf);
    return rc;
}

int cmd_get(int argc, char **argv)
{
    const char *ext = NULL, *out = NULL;
    int tar = 0, json = 0, quiet = 0; /* get prints nothing but the data and errors */
    unsigned flags = 0;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    const cmd_opt opts[] = {
        CMD_STR("ext", 'e', &ext),
        CMD_STR("output", 'o', &out),
        CMD_SET("tar", 0, &tar, 1),
        CMD_TRUST_INDEX(&flags),
        CMD_SET("json", 0, &json, 1),
        CMD_SET("quiet", 'q', &quiet, 1),
    };
    int first, done = cmd_dataset_getopt("get", usage, opts, sizeof opts / sizeof *opts, &s3cfg, argc,
                                         argv, 2, "need DATASET and KEY (or '#N')", &first);
    if (done >= 0) return done;
    if (tar && ext) return cmd_usage_error("get", usage, "--tar writes whole samples; drop --ext");
    const char *dataset = argv[first], *key = argv[first + 1];
    if (cmd_places("get", &(cmd_place){"-o", out, CMD_W | CMD_STREAM | CMD_S3}, 1)) return SK_EXIT_USAGE;
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    sk_hit h;
    int rc;
    const char *places[] = {dataset, out};
    if ((cmd_any_remote(places, 2, &s3cfg) && (rc = sk_s3_new(&s3, &s3cfg, &err))) ||
        (rc = sk_dataset_open_s3(&ds, dataset, s3, flags, &err))) {
        sk_s3_free(s3);
        return cmd_report("get", &err);
    }
    if (key[0] == '#') {
        uint64_t ord;
        if (cmd_parse_u64(key + 1, &ord)) {
            sk_dataset_close(ds), sk_s3_free(s3);
            return cmd_usage_error("get", usage, "'%s' is not #ORDINAL", key);
        }
        rc = sk_dataset_at(ds, ord, &h, &err);
    } else {
        rc = sk_dataset_find(ds, key, strlen(key), &h, &err);
    }
    if (rc) goto fail;
    if (json && (rc = print_json(ds, &h, &err))) goto fail;
    if (json && !out) { /* the place only: no bytes on the JSON's stdout */
        sk_dataset_close(ds), sk_s3_free(s3);
        return SK_EXIT_OK;
    }
    if (tar && to_terminal(out)) {
        sk_dataset_close(ds), sk_s3_free(s3);
        return cmd_usage_error("get", usage, "stdout is a terminal: redirect the tar, or use -o FILE");
    } else if (tar) {
        sk_place_out *o;
        if ((rc = sk_place_out_open(&o, out, s3, &err))) goto fail;
        rc = sk_dataset_write_tar(ds, &h, sk_place_out_fd(o), sk_place_out_name(o), &err);
        if (rc) sk_place_out_abort(o); /* a file that was at out is still there */
        else rc = sk_place_out_commit(o, &err);
        if (rc) goto fail;
    } else if (ext) {
        uint32_t i;
        sk_member_ref m;
        for (i = 0; i < h.sample.member_count; i++) {
            if ((rc = sk_dataset_member(ds, &h, i, &m, &err))) goto fail;
            if (!sk_ext_cmp(m.ext, m.ext_len, ext, strlen(ext))) break; /* lowercased as the index is */
        }
        if (i == h.sample.member_count) {
            rc = sk_error_set(&err, SK_E_NOTFOUND, "sample '%.*s' (#%llu, in %s) has no '%s' member",
                              (int)h.sample.key_len, h.sample.key,
                              (unsigned long long)h.global_ordinal, h.shard_path, ext);
            goto fail;
        }
        struct stat st;
        if (out && !stat(out, &st) && S_ISDIR(st.st_mode)) {
            rc = sk_error_set(&err, SK_E_USAGE, "%s is a directory; with --ext, -o names a file", out);
            goto fail;
        }
        if ((rc = write_member(ds, &h, i, out, s3, &err))) goto fail;
    } else if (out) {
        /* whole sample into a directory (or under an s3:// prefix): KEYBASENAME.EXT per member */
        if (!cmd_any_s3(&out, 1) && mkdir(out, 0755) != 0 && errno != EEXIST) {
            rc = sk_error_set(&err, SK_E_IO, "%s: cannot create directory: %s", out, strerror(errno));
            goto fail;
        }
        const char *base = h.sample.key;
        for (size_t k = 0; k < h.sample.key_len; k++)
            if (h.sample.key[k] == '/') base = h.sample.key + k + 1;
        int blen = (int)(h.sample.key + h.sample.key_len - base);
        for (uint32_t i = 0; i < h.sample.member_count; i++) {
            sk_member_ref m;
            char *path;
            if ((rc = sk_dataset_member(ds, &h, i, &m, &err))) goto fail;
            /* the name comes from index bytes: through the one checked join */
            char *name;
            if (asprintf(&name, "%.*s.%.*s", blen, base, (int)m.ext_len, m.ext) < 0) {
                rc = sk_error_set(&err, SK_E_NOMEM, "out of memory");
                goto fail;
            }
            rc = sk_path_join(out, name, strlen(name), "member file name", &path, &err);
            free(name);
            if (rc) goto fail;
            rc = write_member(ds, &h, i, path, s3, &err);
            free(path);
            if (rc) goto fail;
        }
    } else if (h.sample.member_count == 1) {
        if ((rc = write_member(ds, &h, 0, NULL, s3, &err))) goto fail;
    } else {
        sk_dataset_close(ds), sk_s3_free(s3);
        return cmd_usage_error("get", usage,
                               "sample has %u members: choose one with --ext, or use -o DIR or --tar",
                               h.sample.member_count);
    }
    sk_dataset_close(ds), sk_s3_free(s3);
    return SK_EXIT_OK;
fail:
    sk_dataset_close(ds), sk_s3_free(s3);
    return cmd_report("get", &err);
}
