/*
 * mount_fuse.c - the FUSE operations of `shardkit mount` (libfuse3's
 * low-level API, so inode numbers are ours and stable across mounts) over
 * the tree of mount_tree.c, and the one public call that checks, mounts
 * and serves (sk_mount_run).
 *
 * Reads go through the dataset API only (sk_dataset_read_at): one pread or
 * one ranged GET per read.  Each open file keeps one window of its member:
 * the whole member when it is at most WHOLE bytes (a JPEG is one read
 * however the kernel splits it), else a window that doubles up to MAXWIN
 * while the reads are sequential (read-ahead: a large member read in
 * order costs one request per MAXWIN, not per 128 KiB the kernel asks
 * for).  The kernel keeps what it read in its page cache across opens
 * (keep_cache: the dataset does not change under a mount).  With --verify
 * each open file's member is checked against its CRC32C before its first
 * byte is served: EIO on a mismatch, logged with the shard and offset.
 */
#include "tools/mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#define WHOLE (4u << 20)
#define MAXWIN (8u << 20)
#define MINWIN (256u << 10)
#define TIMEOUT 86400.0 /* the tree never changes while mounted */
#define FILE_OFF (1ull << 62) /* readdir offsets of files start here */

struct mnt {
    sk_mt_tree t;
    sk_dataset *ds;
    int verify;
    uid_t uid;
    gid_t gid;
    uint32_t *kids; /* each directory's children, kids[kid_lo[d] .. kid_lo[d + 1]) */
    size_t *kid_lo;
};

struct fh {
    pthread_mutex_t mu;
    sk_mt_file f;
    unsigned char *buf;
    size_t cap;
    uint64_t wstart, wlen; /* buf holds member bytes [wstart, wstart + wlen) */
    uint64_t next;         /* where a sequential read goes on */
    size_t win;
    int checked, bad;
};

static int to_errno(int code)
{
    return code == SK_E_NOTFOUND ? ENOENT : code == SK_E_NOMEM ? ENOMEM : EIO;
}

/* ------------------------------------------------------------------ attrs */

static void dir_stat(struct mnt *mn, const sk_mt_dir *d, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = d->ino;
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2 + d->nchildren;
    st->st_uid = mn->uid, st->st_gid = mn->gid;
    st->st_size = 4096;
    st->st_mtime = sk_mt_shard_mtime(&mn->t, d->shard >= 0 ? (size_t)d->shard : 0);
    st->st_atime = st->st_ctime = st->st_mtime;
}

static void file_stat(struct mnt *mn, const sk_mt_file *f, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = sk_mt_file_ino(f->hit.global_ordinal, f->member);
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_uid = mn->uid, st->st_gid = mn->gid;
    st->st_size = (off_t)f->m.size;
    st->st_blksize = 65536;
    st->st_blocks = (blkcnt_t)((f->m.size + 511) / 512);
    st->st_mtime = sk_mt_shard_mtime(&mn->t, f->hit.shard);
    st->st_atime = st->st_ctime = st->st_mtime;
}

static void reply_error(fuse_req_t req, struct mnt *mn, const sk_error *e)
{
    if (e->code != SK_E_NOTFOUND) sk_mt_warn(&mn->t, "%s", e->msg);
    sk_fuse.reply_err(req, to_errno(e->code));
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    const sk_mt_dir *d = sk_mt_dir_by_ino(&mn->t, parent);
    if (!d) {
        sk_fuse.reply_err(req, ENOTDIR);
        return;
    }
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.attr_timeout = e.entry_timeout = TIMEOUT;
    size_t n = strlen(name);
    const sk_mt_dir *c = sk_mt_child(&mn->t, d, name, n);
    if (c) {
        e.ino = c->ino;
        dir_stat(mn, c, &e.attr);
        sk_fuse.reply_entry(req, &e);
        return;
    }
    sk_mt_file f;
    sk_error err = SK_ERROR_INIT;
    int rc = sk_mt_find(&mn->t, d, name, n, &f, &err);
    if (rc == SK_E_NOTFOUND) { /* a negative entry, cached as long */
        sk_fuse.reply_entry(req, &e);
        return;
    }
    if (rc) {
        reply_error(req, mn, &err);
        return;
    }
    file_stat(mn, &f, &e.attr);
    e.ino = e.attr.st_ino;
    sk_fuse.reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    struct stat st;
    (void)fi;
    const sk_mt_dir *d = sk_mt_dir_by_ino(&mn->t, ino);
    if (d) {
        dir_stat(mn, d, &st);
        sk_fuse.reply_attr(req, &st, TIMEOUT);
        return;
    }
    sk_mt_file f;
    sk_error err = SK_ERROR_INIT;
    if (sk_mt_file_by_ino(&mn->t, ino, &f, &err)) {
        reply_error(req, mn, &err);
        return;
    }
    file_stat(mn, &f, &st);
    sk_fuse.reply_attr(req, &st, TIMEOUT);
}

/* ---------------------------------------------------------------- readdir */

/* Adds one entry; 0 when the buffer is full (the entry is not added). */
static int add(fuse_req_t req, char *buf, size_t cap, size_t *len, const char *name,
               uint64_t ino, mode_t mode, uint64_t next)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_ino = ino;
    st.st_mode = mode;
    size_t need = sk_fuse.add_direntry(req, buf + *len, cap - *len, name, &st, (off_t)next);
    if (need > cap - *len) return 0;
    *len += need;
    return 1;
}

/* Offsets: 1 after ".", 2 after "..", 3 + j after child directory j,
 * FILE_OFF + pos + 1 after the file at pos = ordinal << 16 | member, so a
 * listing resumes where it stopped from the offset alone. */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off_,
                       struct fuse_file_info *fi)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    sk_mt_tree *t = &mn->t;
    const sk_mt_dir *d = sk_mt_dir_by_ino(t, ino);
    (void)fi;
    if (!d) {
        sk_fuse.reply_err(req, ENOTDIR);
        return;
    }
    if (size > (1u << 20)) size = 1u << 20;
    char *buf = malloc(size);
    if (!buf) {
        sk_fuse.reply_err(req, ENOMEM);
        return;
    }
    size_t len = 0, id = (size_t)(d - t->dirs);
    uint64_t off = (uint64_t)off_;
    int room = 1;
    if (off < 1) room = add(req, buf, size, &len, ".", d->ino, S_IFDIR, off = 1);
    if (room && off < 2)
        room = add(req, buf, size, &len, "..", t->dirs[d->parent].ino, S_IFDIR, off = 2);
    size_t nk = mn->kid_lo[id + 1] - mn->kid_lo[id];
    for (uint64_t j = off - 2; room && off < FILE_OFF && j < nk; j++) {
        const sk_mt_dir *c = &t->dirs[mn->kids[mn->kid_lo[id] + j]];
        if ((room = add(req, buf, size, &len, t->arena + c->name_off, c->ino, S_IFDIR, 3 + j)))
            off = 3 + j;
    }
    if (room && off < FILE_OFF) off = FILE_OFF;
    /* files: the first run that ends after the resume point */
    uint64_t pos = off - FILE_OFF; /* the next (ordinal << 16 | member) to list */
    size_t lo = d->run_lo, hi = d->run_hi;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->runs[mid].end <= (pos >> 16)) lo = mid + 1;
        else hi = mid;
    }
    char name[SK_NAME_COMPONENT_MAX + 2];
    for (size_t r = lo; room && r < d->run_hi; r++) {
        uint64_t o = t->runs[r].start > (pos >> 16) ? t->runs[r].start : (pos >> 16);
        for (; room && o < t->runs[r].end; o++) {
            sk_hit h;
            if (sk_dataset_at(mn->ds, o, &h, NULL) || !sk_mt_sample_ok(&h)) continue;
            const char *base = h.sample.key + h.sample.key_len;
            while (base > h.sample.key && base[-1] != '/') base--;
            size_t bl = (size_t)(h.sample.key + h.sample.key_len - base);
            uint32_t first = o == (pos >> 16) ? (uint32_t)(pos & 0xffff) : 0;
            for (uint32_t i = first; room && i < h.sample.member_count; i++) {
                sk_member_ref m;
                if (sk_dataset_member(mn->ds, &h, i, &m, NULL) ||
                    !sk_mt_member_ok_in(&h, &m, i, mn->ds))
                    continue;
                memcpy(name, base, bl);
                name[bl] = '.';
                memcpy(name + bl + 1, m.ext, m.ext_len);
                name[bl + 1 + m.ext_len] = 0;
                if (d->nchildren && sk_mt_child(t, d, name, bl + 1 + m.ext_len))
                    continue; /* a directory wins */
                uint64_t p = (o << 16) | i;
                room = add(req, buf, size, &len, name, 2 + p, S_IFREG, FILE_OFF + p + 1);
            }
        }
    }
    sk_fuse.reply_buf(req, buf, len);
    free(buf);
}

/* The kernel may keep a directory's entries (the tree never changes). */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    if (!sk_mt_dir_by_ino(&mn->t, ino)) {
        sk_fuse.reply_err(req, ENOTDIR);
        return;
    }
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    sk_fuse.reply_open(req, fi);
}

/* ------------------------------------------------------------------- files */

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        sk_fuse.reply_err(req, EROFS);
        return;
    }
    struct fh *h = calloc(1, sizeof *h);
    if (!h) {
        sk_fuse.reply_err(req, ENOMEM);
        return;
    }
    sk_error err = SK_ERROR_INIT;
    if (sk_mt_file_by_ino(&mn->t, ino, &h->f, &err)) {
        free(h);
        reply_error(req, mn, &err);
        return;
    }
    pthread_mutex_init(&h->mu, NULL);
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->keep_cache = 1;
    fi->noflush = 1; /* nothing to flush: no round trip at each close */
    if (sk_fuse.reply_open(req, fi) == -ENOENT) { /* the open was interrupted */
        pthread_mutex_destroy(&h->mu);
        free(h);
    }
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fh *h = (struct fh *)(uintptr_t)fi->fh;
    (void)ino;
    if (h) {
        /* a read replies with the lock held, so the kernel may send this
         * release before that read's thread has unlocked: wait for it */
        pthread_mutex_lock(&h->mu);
        pthread_mutex_unlock(&h->mu);
        pthread_mutex_destroy(&h->mu);
        free(h->buf);
        free(h);
    }
    sk_fuse.reply_err(req, 0);
}

/* Member bytes [start, start + n) into h->buf (grown to hold them). */
static int fetch(struct mnt *mn, struct fh *h, uint64_t start, size_t n, sk_error *err)
{
    h->wlen = 0;
    if (n > h->cap || !h->buf) { /* sized to the need: most members are small */
        size_t cap = n ? n : 1;
        free(h->buf);
        h->cap = 0;
        SK_FAIL_IF(!(h->buf = malloc(cap)), err, SK_E_NOMEM, "out of memory for a read window");
        h->cap = cap;
    }
    const sk_mt_file *f = &h->f;
    SK_GUARD(sk_dataset_read_at(mn->ds, &f->hit, f->m.data_offset + start, h->buf, n, err));
    h->wstart = start, h->wlen = n;
    return SK_OK;
}

static void name_of(const sk_mt_file *f, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s.%.*s", (int)(f->hit.sample.key_len > 200 ? 200 : f->hit.sample.key_len),
             f->hit.sample.key, (int)f->m.ext_len, f->m.ext);
}

/* --verify: the member's CRC32C, over one window at a time. */
static int check(struct mnt *mn, struct fh *h, sk_error *err)
{
    const sk_mt_file *f = &h->f;
    if (!f->m.crc32c && f->m.size) return SK_OK; /* built with --fast: no CRC to check */
    uint32_t crc = 0;
    for (uint64_t p = 0; p < f->m.size;) {
        size_t n = f->m.size - p < WHOLE ? (size_t)(f->m.size - p) : WHOLE;
        SK_GUARD(fetch(mn, h, p, n, err));
        crc = sk_crc32c(crc, h->buf, n);
        p += n;
    }
    if (crc != f->m.crc32c) {
        char nm[512];
        name_of(f, nm, sizeof nm);
        h->wlen = 0;
        return sk_error_set(err, SK_E_MISMATCH,
                            "%s: member '%s' at offset %llu: CRC32C %08x, the index says %08x",
                            f->hit.shard_path, nm, (unsigned long long)f->m.data_offset, crc,
                            f->m.crc32c);
    }
    return SK_OK;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off_,
                    struct fuse_file_info *fi)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    struct fh *h = (struct fh *)(uintptr_t)fi->fh;
    uint64_t msize = h->f.m.size, off = (uint64_t)off_;
    (void)ino;
    if (off >= msize) {
        sk_fuse.reply_buf(req, NULL, 0);
        return;
    }
    size_t n = msize - off < size ? (size_t)(msize - off) : size;
    sk_error err = SK_ERROR_INIT;
    int rc = SK_OK;
    pthread_mutex_lock(&h->mu);
    if (h->bad) {
        rc = h->bad;
    } else if (mn->verify && !h->checked) {
        if (!(rc = check(mn, h, &err))) h->checked = 1;
    }
    if (!rc && !(off >= h->wstart && off + n <= h->wstart + h->wlen)) {
        uint64_t start = off, len;
        if (msize <= WHOLE) {
            start = 0, len = msize; /* the whole member: one read */
        } else {
            h->win = off == h->next && h->win ? (h->win * 2 > MAXWIN ? MAXWIN : h->win * 2)
                                              : MINWIN;
            len = h->win > n ? h->win : n;
            if (len > msize - off) len = msize - off;
        }
        rc = fetch(mn, h, start, (size_t)len, &err);
    }
    if (rc) {
        if (rc == SK_E_MISMATCH) h->bad = rc; /* stays EIO for this open file */
        if (err.code) sk_mt_warn(&mn->t, "%s", err.msg);
        pthread_mutex_unlock(&h->mu);
        sk_fuse.reply_err(req, to_errno(rc == SK_E_NOTFOUND ? SK_E_IO : rc));
        return;
    }
    h->next = off + n;
    sk_fuse.reply_buf(req, (const char *)h->buf + (off - h->wstart), n);
    pthread_mutex_unlock(&h->mu);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct mnt *mn = sk_fuse.req_userdata(req);
    struct statvfs s;
    (void)ino;
    memset(&s, 0, sizeof s);
    s.f_bsize = s.f_frsize = 4096;
    s.f_files = mn->t.files + mn->t.ndirs;
    s.f_namemax = SK_NAME_COMPONENT_MAX;
    s.f_flag = ST_RDONLY;
    sk_fuse.reply_statfs(req, &s);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = op_lookup,
    .getattr = op_getattr,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .statfs = op_statfs,
};

/* ------------------------------------------------------------------- mount */

/* Each directory's children in one array (readdir resumes by position). */
static int index_kids(struct mnt *mn, sk_error *err)
{
    sk_mt_tree *t = &mn->t;
    mn->kid_lo = calloc(t->ndirs + 1, sizeof *mn->kid_lo);
    mn->kids = malloc((t->ndirs ? t->ndirs : 1) * sizeof *mn->kids);
    SK_FAIL_IF(!mn->kid_lo || !mn->kids, err, SK_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t d = 0; d < t->ndirs; d++) {
        mn->kid_lo[d] = k;
        for (uint32_t c = t->dirs[d].child; c != UINT32_MAX; c = t->dirs[c].sibling)
            mn->kids[k++] = c;
    }
    mn->kid_lo[t->ndirs] = k;
    return SK_OK;
}

static int check_mountpoint(const char *mp, sk_error *err)
{
    struct stat st;
    SK_FAIL_IF(stat(mp, &st) != 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
               "%s: %s (the mountpoint must be an empty directory)", mp, strerror(errno));
    SK_FAIL_IF(!S_ISDIR(st.st_mode), err, SK_E_USAGE, "%s: not a directory", mp);
    DIR *d = opendir(mp);
    SK_FAIL_IF(!d, err, SK_E_IO, "%s: %s", mp, strerror(errno));
    struct dirent *e;
    int full = 0;
    while (!full && (e = readdir(d)))
        full = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    SK_FAIL_IF(full, err, SK_E_IO,
               "%s: not empty (a mount would hide what it holds; use an empty directory)", mp);
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, SK_E_IO,
               "/dev/fuse: %s (mount needs the fuse kernel module and access to /dev/fuse; in "
               "a container: --device /dev/fuse --cap-add SYS_ADMIN)", strerror(errno));
    close(fd);
    return SK_OK;
}

static int syslog_on;
static void default_warn(void *ctx, const char *msg)
{
    (void)ctx;
    if (syslog_on) syslog(LOG_WARNING, "%s", msg);
    else fprintf(stderr, "shardkit mount: %s\n", msg);
}

/* Mounts and serves; `ready` (a pipe to the waiting parent, or -1) gets
 * "0" once the mount is up, or the error. */
static int serve(const char *dataset, const char *mp, const sk_mount_options *o, int ready,
                 sk_error *err)
{
    struct mnt mn;
    memset(&mn, 0, sizeof mn);
    mn.verify = o->verify;
    mn.uid = getuid(), mn.gid = getgid();
    mn.t.warn = o->warn ? o->warn : default_warn;
    mn.t.warn_ctx = o->warn ? o->ctx : NULL;
    int rc = o->open(o->ctx, &mn.ds, err);
    if (!rc && o->cache_dir) sk_dataset_set_cache(mn.ds, o->cache_dir, o->cache_size);
    if (!rc && (o->read_window || o->window_memory))
        rc = sk_dataset_set_read_window(
            mn.ds, o->read_window == SIZE_MAX ? 0 : o->read_window ? o->read_window : SK_READ_WINDOW,
            o->window_memory ? o->window_memory : SK_READ_WINDOW_MEMORY, err);
    if (!rc) rc = sk_mt_build(&mn.t, mn.ds, o->by_shard, err);
    if (!rc) rc = index_kids(&mn, err);
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse_session *se = NULL;
    char opts[1024];
    snprintf(opts, sizeof opts, "ro,default_permissions,fsname=shardkit,subtype=shardkit%s%s%s",
             o->allow_other ? ",allow_other" : "", o->fuse_opts ? "," : "",
             o->fuse_opts ? o->fuse_opts : "");
    if (!rc && (sk_fuse.opt_add_arg(&args, "shardkit") || sk_fuse.opt_add_arg(&args, "-o") ||
                sk_fuse.opt_add_arg(&args, opts)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc && !(se = sk_fuse.session_new(&args, &ops, sizeof ops, &mn)))
        rc = sk_error_set(err, SK_E_USAGE, "%s: libfuse refused the options '%s'", mp, opts);
    if (!rc && sk_fuse.set_signal_handlers(se))
        rc = sk_error_set(err, SK_E_IO, "%s: cannot set signal handlers", mp);
    if (!rc && sk_fuse.session_mount(se, mp))
        rc = sk_error_set(err, SK_E_IO, "%s: the mount failed (libfuse's reason above)", mp);
    (void)dataset;
    if (ready >= 0) { /* tell the parent, then leave the terminal */
        char msg[SK_ERROR_MAX + 16];
        int len = snprintf(msg, sizeof msg, "%d %s", rc, rc ? err->msg : "");
        if (write(ready, msg, (size_t)len) < 0) { /* the parent went: nothing to tell */
        }
        close(ready);
        if (!rc) {
            int nul = open("/dev/null", O_RDWR);
            if (nul >= 0) dup2(nul, 0), dup2(nul, 1), dup2(nul, 2), close(nul);
            setsid();
            if (!o->warn) openlog("shardkit-mount", LOG_PID, LOG_DAEMON), syslog_on = 1;
        }
    }
    if (!rc) {
        struct fuse_loop_config lc = {.clone_fd = 0,
                                      .max_idle_threads = o->threads > 0 ? (unsigned)o->threads : 10};
        sk_fuse.session_loop_mt(se, &lc);
        sk_fuse.session_unmount(se);
    }
    if (se) {
        sk_fuse.remove_signal_handlers(se);
        sk_fuse.session_destroy(se);
    }
    sk_fuse.opt_free_args(&args);
    free(mn.kids);
    free(mn.kid_lo);
    if (mn.t.dirs) sk_mt_free(&mn.t);
    if (mn.ds && o->close) o->close(o->ctx, mn.ds);
    return rc;
}

void sk_mount_options_init_sized(sk_mount_options *o, size_t size)
{
    static const sk_mount_options d = {.struct_size = sizeof d};
    sk_options_init(o, size, &d, sizeof d);
}

int sk_mount_run(const char *dataset, const char *mountpoint, const sk_mount_options *opts,
                 sk_error *err)
{
    sk_mount_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_mount_options", err));
    SK_FAIL_IF(!o.open, err, SK_E_USAGE, "sk_mount_run: no open function for the dataset");
    SK_GUARD(sk_fuse_load(err));
    SK_GUARD(check_mountpoint(mountpoint, err));
    char mp[PATH_MAX];
    SK_FAIL_IF(!realpath(mountpoint, mp), err, SK_E_IO, "%s: %s", mountpoint, strerror(errno));
    (void)dataset;
    if (o.foreground) return serve(dataset, mp, &o, -1, err);
    /* the background: the child opens the dataset (an S3 client's thread
     * would not survive a fork), mounts, and says how it went */
    int p[2];
    SK_FAIL_IF(pipe(p) != 0, err, SK_E_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    SK_FAIL_IF(pid < 0, err, SK_E_IO, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(p[0]);
        int rc = serve(dataset, mp, &o, p[1], err);
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    char msg[SK_ERROR_MAX + 16];
    size_t len = 0;
    ssize_t k;
    while (len < sizeof msg - 1 && ((k = read(p[0], msg + len, sizeof msg - 1 - len)) > 0 ||
                                    (k < 0 && errno == EINTR)))
        if (k > 0) len += (size_t)k;
    close(p[0]);
    msg[len] = 0;
    int rc = len ? atoi(msg) : SK_E_IO;
    if (!len) {
        int st = 0;
        waitpid(pid, &st, 0);
        return sk_error_set(err, SK_E_IO, "%s: the mount process ended before mounting", mountpoint);
    }
    if (rc) {
        const char *m = strchr(msg, ' ');
        waitpid(pid, NULL, 0);
        return sk_error_set(err, rc, "%s", m ? m + 1 : "mount failed");
    }
    return SK_OK;
}
