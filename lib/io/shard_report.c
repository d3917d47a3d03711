/*
 * shard_report.c - what a `shard` run (or pack's image stage, which
 * writes through the same output) says as it goes: its warnings, through
 * the caller's callback, and its progress at most twice a second.  Every
 * file of the output and of the inputs calls down to it; it calls none of
 * them.
 */
#include "io/shard_run.h"

#include <stdarg.h>

/* ---------------------------------------------------------------- reports */

void sk_shard_run_warnf(sk_shard_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(r->o->warn, r->o->ctx, fmt, ap);
    va_end(ap);
}

double sk_shard_run_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

void sk_shard_run_progress(sk_shard_run *r, int final)
{
    if (!r->o->progress) return;
    if (!final && sk_shard_run_since(&r->last) < 0.5) return;
    clock_gettime(CLOCK_MONOTONIC, &r->last);
    r->st.seconds = sk_shard_run_since(&r->t0);
    r->o->progress(r->o->ctx, &r->st);
}
