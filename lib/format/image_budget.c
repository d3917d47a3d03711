/*
 * image_budget.c - one memory budget for the image stage (--image-memory),
 * shared by every image worker of a run.
 *
 * A worker's memory is set by the image, not by the sample's bytes: a
 * 1 MB progressive 9400x9400 JPEG makes libjpeg keep every DCT coefficient
 * of the whole image (~270 MB) until its last scan.  So before decoding, a
 * worker reserves what the image will need (image.c computes it from the
 * header) and waits while the others' reservations leave too little; an
 * image whose need alone is over the whole budget is a bad image, never a
 * wait that cannot end.  Reservations are served in the order they are
 * asked for (a ticket), so a large image is not starved by small ones.
 * The budget only delays work: what is decoded, and the bytes written, do
 * not depend on it.
 */
#include "format/image.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct sk_image_budget {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t total, used;
    uint64_t next_ticket, serving;
};

uint64_t sk_image_memory_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t q = phys / 4;
    if (q > SK_IMAGE_MEMORY_MAX) q = SK_IMAGE_MEMORY_MAX;
    if (q < SK_IMAGE_MEMORY_MIN) q = SK_IMAGE_MEMORY_MIN;
    return q;
}

int sk_image_budget_new(sk_image_budget **out, uint64_t bytes, sk_error *err)
{
    sk_image_budget *b = calloc(1, sizeof *b);
    SK_FAIL_IF(!b, err, SK_E_NOMEM, "out of memory");
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->total = bytes ? bytes : sk_image_memory_default();
    *out = b;
    return SK_OK;
}

void sk_image_budget_free(sk_image_budget *b)
{
    if (!b) return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}

uint64_t sk_image_budget_total(const sk_image_budget *b)
{
    return b ? b->total : 0;
}

/* Waits for bytes (at most the total: the caller checks) to be free, in
 * ticket order.  The wait is bounded: every reservation is released when
 * its image is done, and one fits alone. */
void sk_image_budget_take(sk_image_budget *b, uint64_t bytes)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    uint64_t t = b->next_ticket++;
    while (t != b->serving || b->used + bytes > b->total) pthread_cond_wait(&b->cv, &b->mu);
    b->used += bytes;
    b->serving++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void sk_image_budget_give(sk_image_budget *b, uint64_t bytes)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->used -= bytes;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}
