/*
 * read_batch.c - a batch of positioned reads of local files (read_batch.h)
 * submitted with one io_uring_enter: from the page cache the kernel copies
 * each read during the submission, so a batch of 32 reads costs one
 * system call instead of 32.  Where no ring can be made every read is a
 * pread, and a read the ring leaves short or interrupted is finished with
 * pread too: the results never depend on which path ran.
 *
 * liburing is opened (dlopen, by its ABI soname) the first time a batch
 * is made, not linked: only the global order's local reads use it, and
 * every other shardkit process (`--version`, `get`, `pack`) would load it
 * at start for nothing (tests/e2e/startup_libs.sh).  Its header's inline
 * helpers (queue an entry, reap a completion) need no library; the five
 * calls that do go through `lib` below.  No liburing.so.2 on the machine:
 * every read is a pread.
 */
#include "io/read_batch.h"

#include <dlfcn.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct rd {
    int fd;
    const char *url;
    uint64_t off;
    unsigned char *buf;
    size_t n;
};

struct sk_rbatch {
    struct io_uring ring;
    int uring;     /* the ring is made */
    unsigned forks; /* fork_count when it was made */
    struct rd q[SK_RBATCH_MAX];
    size_t nq;
};

/* The rest of read i from done bytes on, with pread. */
static int finish(const struct rd *r, size_t done, size_t *got, sk_error *err)
{
    *got = done;
    while (*got < r->n) {
        ssize_t k = pread(r->fd, r->buf + *got, r->n - *got, (off_t)(r->off + *got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed at offset %llu: %s", r->url,
                   (unsigned long long)(r->off + *got), strerror(errno));
        if (k == 0) break;
        *got += (size_t)k;
    }
    return SK_OK;
}

/* A forked child shares its parent's rings (the same kernel object, the
 * same mapped queues): a child that finds its batch's ring made before the
 * fork makes its own, so the two never submit to one queue. */
static unsigned fork_count;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void forked(void) { __atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED); }
static void watch_forks(void) { (void)pthread_atfork(NULL, NULL, forked); }

#define URING_SONAME "liburing.so.2"

static struct {
    int (*init_params)(unsigned, struct io_uring *, struct io_uring_params *);
    int (*init)(unsigned, struct io_uring *, unsigned);
    void (*exit)(struct io_uring *);
    int (*submit_and_wait)(struct io_uring *, unsigned);
    int (*get_cqe)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *);
    int ok;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void load_lib(void)
{
    void *h = dlopen(URING_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    *(void **)&lib.init_params = dlsym(h, "io_uring_queue_init_params");
    *(void **)&lib.init = dlsym(h, "io_uring_queue_init");
    *(void **)&lib.exit = dlsym(h, "io_uring_queue_exit");
    *(void **)&lib.submit_and_wait = dlsym(h, "io_uring_submit_and_wait");
    *(void **)&lib.get_cqe = dlsym(h, "__io_uring_get_cqe");
    lib.ok = lib.init_params && lib.init && lib.exit && lib.submit_and_wait && lib.get_cqe;
}

static void make_ring(sk_rbatch *b)
{
    const char *env = getenv("SHARDKIT_IO_URING");
    b->uring = 0;
    if (env && strcmp(env, "0") == 0) return;
    pthread_once(&lib_once, load_lib);
    if (!lib.ok) return;
    /* COOP_TASKRUN: no interrupt of the task to run completions (one
     * task submits and reaps); kernels before 5.19 refuse the flag */
    struct io_uring_params p = {.flags = IORING_SETUP_COOP_TASKRUN};
    int rc = lib.init_params(SK_RBATCH_MAX, &b->ring, &p);
    if (rc == -EINVAL) rc = lib.init(SK_RBATCH_MAX, &b->ring, 0);
    b->uring = rc == 0;
    b->forks = __atomic_load_n(&fork_count, __ATOMIC_RELAXED);
}

int sk_rbatch_open(sk_rbatch **out, sk_error *err)
{
    sk_rbatch *b = calloc(1, sizeof *b);
    SK_FAIL_IF(!b, err, SK_E_NOMEM, "out of memory");
    pthread_once(&fork_once, watch_forks);
    make_ring(b);
    *out = b;
    return SK_OK;
}

void sk_rbatch_close(sk_rbatch *b)
{
    if (!b) return;
    if (b->uring) lib.exit(&b->ring);
    free(b);
}

int sk_rbatch_uring(const sk_rbatch *b)
{
    return b->uring;
}

void sk_rbatch_add(sk_rbatch *b, int fd, const char *url, uint64_t off, void *buf, size_t n)
{
    b->q[b->nq++] = (struct rd){fd, url, off, buf, n};
}

/* The queue through the ring; *refused set when the kernel refused the
 * submission before taking any of it (the caller then preads). */
static int run_ring(sk_rbatch *b, size_t *got, int *refused, sk_error *err)
{
    for (size_t i = 0; i < b->nq; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
        /* the ring has SK_RBATCH_MAX entries and is empty between runs */
        io_uring_prep_read(sqe, b->q[i].fd, b->q[i].buf, (unsigned)b->q[i].n, b->q[i].off);
        io_uring_sqe_set_data64(sqe, i);
    }
    int sub = 0, left = (int)b->nq, rc = SK_OK;
    while (sub < (int)b->nq) {
        int k = lib.submit_and_wait(&b->ring, 0);
        if (k == -EINTR || k == -EAGAIN || k == -EBUSY) continue;
        if (k < 0) {
            if (sub == 0) return *refused = 1, SK_OK; /* a filter on io_uring_enter */
            return sk_error_set(err, SK_E_IO, "io_uring: submission failed: %s", strerror(-k));
        }
        sub += k;
    }
    while (left > 0) {
        struct io_uring_cqe *cqe = NULL;
        /* io_uring_wait_cqe, with its library call through lib */
        int k = __io_uring_peek_cqe(&b->ring, &cqe, NULL);
        if (k || !cqe) k = lib.get_cqe(&b->ring, &cqe, 0, 1, NULL);
        if (k == -EINTR || k == -EAGAIN) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "io_uring: waiting for reads failed: %s", strerror(-k));
        size_t i = (size_t)io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&b->ring, cqe);
        left--;
        if (rc) continue; /* reap every completion: the ring is reused */
        const struct rd *r = &b->q[i];
        if (res == -EINTR || res == -EAGAIN) res = 0; /* pread the whole read */
        if (res < 0)
            rc = sk_error_set(err, SK_E_IO, "%s: read failed at offset %llu: %s", r->url,
                              (unsigned long long)r->off, strerror(-res));
        else if ((size_t)res == r->n)
            got[i] = r->n;
        else /* short: the end of the file, or the kernel stopped early */
            rc = finish(r, (size_t)res, &got[i], err);
    }
    return rc;
}

int sk_rbatch_run(sk_rbatch *b, size_t *got, sk_error *err)
{
    int rc = SK_OK, refused = 0;
    if (b->uring && b->forks != __atomic_load_n(&fork_count, __ATOMIC_RELAXED)) {
        lib.exit(&b->ring); /* the parent's: this process's mapping and fd only */
        make_ring(b);
    }
    if (b->uring && b->nq) {
        rc = run_ring(b, got, &refused, err);
        if (!refused) {
            b->nq = 0;
            return rc;
        }
        lib.exit(&b->ring); /* made, but its use refused: pread from now on */
        b->uring = 0;
    }
    for (size_t i = 0; rc == SK_OK && i < b->nq; i++) rc = finish(&b->q[i], 0, &got[i], err);
    b->nq = 0;
    return rc;
}
