/* fuzz_mount_tree.c - the tree `shardkit mount` builds from an index
 * (tools/mount_tree.c), from any index bytes opened without its body
 * checksum (--trust-index): built in both views, then every name a
 * listing would show is looked up again.  A crafted index may lose
 * members (skipped with a warning) or hide them from lookups (a lying key
 * order table); it may never crash the mount, put a '/' in a name or a
 * "." or ".." in the tree, or answer a lookup with another name. */
#include "tools/mount.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void quiet(void *ctx, const char *msg)
{
    (void)ctx, (void)msg;
}

static char dir[64], shard[96], idx[96];

static void cleanup(void)
{
    unlink(idx);
    unlink(shard);
    rmdir(dir);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/fuzz-mount-XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(shard, sizeof shard, "%s/s.tar", dir);
    snprintf(idx, sizeof idx, "%s/s.tar.idx", dir);
    static const char zeros[4096];
    int fd = open(shard, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros) abort();
    close(fd);
    atexit(cleanup);
}

static void walk(sk_mt_tree *t, sk_dataset *ds)
{
    char name[SK_NAME_COMPONENT_MAX + 2];
    size_t listed = 0;
    for (size_t d = 0; d < t->ndirs && listed < 2000; d++) {
        const sk_mt_dir *dd = &t->dirs[d];
        if (d && (dd->name_len == 0 || memchr(t->arena + dd->name_off, '/', dd->name_len) ||
                  !strcmp(t->arena + dd->name_off, ".") || !strcmp(t->arena + dd->name_off, "..")))
            abort(); /* a directory name that is not one component */
        for (size_t r = dd->run_lo; r < dd->run_hi && listed < 2000; r++)
            for (uint64_t o = t->runs[r].start; o < t->runs[r].end && listed < 2000; o++) {
                sk_hit h;
                if (sk_dataset_at(ds, o, &h, NULL)) continue;
                const char *base = h.sample.key + h.sample.key_len;
                while (base > h.sample.key && base[-1] != '/') base--;
                size_t bl = (size_t)(h.sample.key + h.sample.key_len - base);
                for (uint32_t i = 0; i < h.sample.member_count && listed < 2000; i++) {
                    sk_member_ref m;
                    if (sk_dataset_member(ds, &h, i, &m, NULL) || !sk_mt_member_ok(&h, &m, i, ds))
                        continue;
                    listed++;
                    memcpy(name, base, bl);
                    name[bl] = '.';
                    memcpy(name + bl + 1, m.ext, m.ext_len);
                    size_t n = bl + 1 + m.ext_len;
                    name[n] = 0;
                    if (memchr(name, '/', n) || memchr(name, 0, n)) abort();
                    sk_mt_file f;
                    if (sk_mt_child(t, dd, name, n)) continue; /* a directory wins */
                    /* a lookup finds this name or nothing (a crafted key order table
                     * or a key in two samples can hide it), never another name */
                    if (!sk_mt_find(t, dd, name, n, &f, NULL) &&
                        (f.hit.sample.key_len != h.sample.key_len ||
                         memcmp(f.hit.sample.key, h.sample.key, h.sample.key_len) ||
                         f.m.ext_len != m.ext_len || memcmp(f.m.ext, m.ext, m.ext_len)))
                        abort();
                    (void)sk_mt_file_by_ino(t, sk_mt_file_ino(o, i), &f, NULL);
                }
            }
    }
    if (t->nshards) (void)sk_mt_shard_mtime(t, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) setup();
    int fd = open(idx, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    close(fd);
    for (int by_shard = 0; by_shard <= 1; by_shard++) {
        sk_dataset *ds = NULL;
        if (sk_dataset_open(&ds, shard, SK_INDEX_TRUST_BODY, NULL)) return 0;
        sk_mt_tree t;
        memset(&t, 0, sizeof t);
        t.warn = quiet;
        if (!sk_mt_build(&t, ds, by_shard, NULL)) walk(&t, ds);
        if (t.dirs) sk_mt_free(&t);
        sk_dataset_close(ds);
    }
    return 0;
}
