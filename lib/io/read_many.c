/*
 * read_many.c - reads at offsets made several at once (read_many.h): a
 * pool of threads waits for a run; a run hands out its jobs in the
 * caller's order, each thread taking the next one when it is free, the
 * caller's thread too, until none is left or one has failed.
 */
#include "io/read_many.h"

#include <pthread.h>
#include <stdlib.h>

#define THREADS_MAX 32

struct sk_rmany {
    pthread_t th[THREADS_MAX];
    int nth;
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    unsigned long gen; /* the run */
    sk_rmany_job *jobs;
    size_t *ord, cap_ord, *first, cap_first;
    size_t next, end, busy;
    int rc, quit;
    sk_error err;
};

/* Takes the run's jobs until none is left; m->mu held (released while
 * reading). */
static void take(sk_rmany *m)
{
    while (!m->rc && m->next < m->end) {
        sk_rmany_job *j = &m->jobs[m->ord[m->next++]];
        m->busy++;
        pthread_mutex_unlock(&m->mu);
        sk_error e = {0};
        j->got = 0;
        int rc = j->st->ops->read_at(j->st, j->off, j->dst, j->len, &j->got, &e);
        pthread_mutex_lock(&m->mu);
        m->busy--;
        if (rc && !m->rc) m->rc = rc, m->err = e;
    }
    if (!m->busy) pthread_cond_broadcast(&m->done_cv);
}

static void *reader_main(void *arg)
{
    sk_rmany *m = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->quit && m->gen == seen) pthread_cond_wait(&m->cv, &m->mu);
        if (m->quit) break;
        seen = m->gen;
        take(m);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int sk_rmany_open(sk_rmany **out, int threads, sk_error *err)
{
    sk_rmany *m = calloc(1, sizeof *m);
    *out = NULL;
    SK_FAIL_IF(!m, err, SK_E_NOMEM, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    pthread_cond_init(&m->done_cv, NULL);
    if (threads > THREADS_MAX + 1) threads = THREADS_MAX + 1;
    while (m->nth < threads - 1 && !pthread_create(&m->th[m->nth], NULL, reader_main, m)) m->nth++;
    *out = m;
    return SK_OK;
}

int sk_rmany_run(sk_rmany *m, sk_rmany_job *jobs, size_t n, sk_error *err)
{
    /* the order: each store's first job, then each one's second, ... */
    size_t ns = 0, k = 0;
    SK_GUARD(sk_grow((void **)&m->ord, &m->cap_ord, n + 1, sizeof *m->ord, err));
    SK_GUARD(sk_grow((void **)&m->first, &m->cap_first, n + 1, sizeof *m->first, err));
    for (size_t i = 0; i < n; i++)
        if (!i || jobs[i].st != jobs[i - 1].st) m->first[ns++] = i;
    m->first[ns] = n;
    for (size_t depth = 0; k < n; depth++)
        for (size_t g = 0; g < ns; g++)
            if (m->first[g] + depth < m->first[g + 1]) m->ord[k++] = m->first[g] + depth;
    pthread_mutex_lock(&m->mu);
    m->jobs = jobs, m->next = 0, m->end = n, m->rc = 0;
    m->gen++;
    pthread_cond_broadcast(&m->cv);
    take(m);
    while (m->busy || (!m->rc && m->next < m->end)) pthread_cond_wait(&m->done_cv, &m->mu);
    int rc = m->rc;
    if (rc && err) *err = m->err;
    m->jobs = NULL, m->end = 0;
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; !rc && i < n; i++) {
        const sk_rmany_job *j = &jobs[i];
        SK_FAIL_IF(j->got < j->len, err, SK_E_CORRUPT,
                   "%s: ends at offset %llu, inside bytes %llu..%llu read: truncated", j->st->url,
                   (unsigned long long)(j->off + j->got), (unsigned long long)j->off,
                   (unsigned long long)(j->off + j->len));
    }
    return rc;
}

void sk_rmany_close(sk_rmany *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->quit = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->nth; i++) pthread_join(m->th[i], NULL);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    pthread_cond_destroy(&m->done_cv);
    free(m->ord);
    free(m->first);
    free(m);
}
