/*
 * order_grid.c - proves the reader's global order (sk_reader_options.
 * global_order) on a real dataset: over world sizes 1, 2, 3, 4, 8 x
 * workers 0 (the DataLoader's main process: one slot a rank), 1, 2, 4,
 * every slot is read to its end and
 *   - the union of the slots' samples is the epoch, each sample once;
 *   - each position of the global sequence holds the same sample at
 *     every grid point (the sequence does not depend on the world);
 *   - slot counts differ by at most one, and each slot's count is the
 *     sk_reader_slot_left it announced before reading;
 * then for several stop points, a job of R ranks x W workers consumes
 * whole steps the way a DataLoader does (batch b from worker step mod
 * W), saves sk_reader_get_position, and a job of another world size and
 * worker count seeks to it and reads the rest: the union of both runs is
 * the epoch exactly once.  Prints the epoch's key sequence digest and
 * the reads per sample; exit 0 when every check holds, 1 on a failed
 * check, 2 on usage or a reader error.
 * With --proportion, each URL is a stream mixed in that proportion
 * (--samples: the epoch's length): each stream's share of the epoch must
 * be within 1% of the asked, and with --drift N, within N samples of its
 * share at every point of the epoch (each prefix of the sequence): the
 * mixing holds within the epoch, not only at its end.  The largest drift
 * is printed either way.
 * --points R:W,... checks those grid points only, --resume
 * R1:W1:R2:W2@STOP,... those resumes only (STOP: the fraction of the
 * epoch consumed first): a few of each prove that a store (S3) hands out
 * the order the whole grid proved on local files.
 *   order_grid [--endpoint URL] [--window N] [--seed S] [--batch B]
 *              [--read-ahead BYTES] [--proportion P,P...] [--samples N] [--drift N]
 *              [--no-resume] [--points R:W,...] [--resume R1:W1:R2:W2@STOP,...]
 *              URL...
 */
#include "shardkit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the grid: world sizes x workers, unless --points names some */
#define MAX_POINTS 32
static int points[MAX_POINTS][2];
static size_t npoints;
/* elastic resume: (R1 x W1) consumes whole steps up to a stop, (R2 x W2)
 * finishes; the table unless --resume names some */
struct resume {
    int r1, w1, r2, w2;
    double stop;
};
#define MAX_RESUMES 32
static struct resume resumes[MAX_RESUMES];
static size_t nresumes;

static void default_plan(void)
{
    static const int worlds[] = {1, 2, 3, 4, 8}, workers[] = {0, 1, 2, 4};
    static const int plan[][4] = {{8, 4, 6, 2}, {4, 2, 3, 0}, {2, 0, 8, 4}, {3, 1, 1, 2},
                                  {1, 4, 4, 1}};
    static const double stops[] = {0.0, 0.13, 0.5, 0.77, 0.999};
    if (!npoints)
        for (size_t a = 0; a < sizeof worlds / sizeof *worlds; a++)
            for (size_t b = 0; b < sizeof workers / sizeof *workers; b++) {
                points[npoints][0] = worlds[a];
                points[npoints++][1] = workers[b];
            }
    if (!nresumes)
        for (size_t p = 0; p < sizeof plan / sizeof *plan; p++)
            for (size_t si = 0; si < sizeof stops / sizeof *stops; si++)
                resumes[nresumes++] = (struct resume){plan[p][0], plan[p][1], plan[p][2],
                                                      plan[p][3], stops[si]};
}

/* "R:W,R:W" into points; 0 when malformed. */
static int parse_points(const char *p)
{
    for (;;) {
        int r, w, n = 0;
        if (npoints == MAX_POINTS || sscanf(p, "%d:%d%n", &r, &w, &n) != 2 || r < 1 || w < 0)
            return 0;
        points[npoints][0] = r;
        points[npoints++][1] = w;
        p += n;
        if (!*p) return 1;
        if (*p++ != ',') return 0;
    }
}

/* "R1:W1:R2:W2@STOP,..." into resumes; 0 when malformed. */
static int parse_resumes(const char *p)
{
    for (;;) {
        struct resume v;
        int n = 0;
        if (nresumes == MAX_RESUMES ||
            sscanf(p, "%d:%d:%d:%d@%lf%n", &v.r1, &v.w1, &v.r2, &v.w2, &v.stop, &n) != 5 ||
            v.r1 < 1 || v.r2 < 1 || v.w1 < 0 || v.w2 < 0 || v.stop < 0 || v.stop >= 1)
            return 0;
        resumes[nresumes++] = v;
        p += n;
        if (!*p) return 1;
        if (*p++ != ',') return 0;
    }
}

static const char *const *urls;
static size_t nurls;
static const char *endpoint;
static size_t window = 8;
static uint64_t seed = 7;
static int batch = 4;
static int failures;
/* mixing: one entry per url */
static double proportion[16];
static int mixing;
static uint64_t samples_per_epoch;
static double max_drift = -1; /* --drift: samples a stream may be off its share, -1: unchecked */
static size_t read_ahead = 256 << 10;
static int no_resume;
static uint64_t reads;

/* A sample's identity: the shard's place in the list and its ordinal. */
typedef struct {
    uint64_t shard, ordinal, dataset;
} ident;

static void die(const char *what, const sk_error *e)
{
    fprintf(stderr, "order_grid: %s: %s\n", what, e->msg);
    exit(2);
}

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    if (ok) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static sk_reader *open_slot(int rank, int world, int worker, int nworkers, int b)
{
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.global_order = 1;
    o.shuffle_shards = 1;
    o.shuffle_window = window;
    o.seed = seed;
    o.rank = rank, o.world_size = world;
    o.worker = worker, o.num_workers = nworkers;
    o.batch_size = b;
    o.read_ahead = read_ahead;
    o.s3_endpoint = endpoint;
    if (mixing) o.proportion = proportion;
    o.samples_per_epoch = samples_per_epoch;
    sk_reader *r;
    sk_error e = SK_ERROR_INIT;
    if (sk_reader_open(&r, urls, nurls, &o, &e)) die("open", &e);
    return r;
}

/* Reads up to n samples of r (n 0: to its end) into seen[position]. */
static uint64_t take(sk_reader *r, uint64_t n, ident *seen, unsigned char *mark, uint64_t total,
                     const char *where)
{
    uint64_t got = 0;
    sk_error e = SK_ERROR_INIT;
    while (!n || got < n) {
        const sk_reader_sample *s;
        if (sk_reader_next(r, &s, &e)) die(where, &e);
        if (!s) break;
        got++;
        if (s->position >= total) {
            check(0, "%s: position %llu past the epoch", where, (unsigned long long)s->position);
            continue;
        }
        check(!mark[s->position], "%s: position %llu handed out twice", where,
              (unsigned long long)s->position);
        mark[s->position] = 1;
        seen[s->position] = (ident){s->shard, s->ordinal, s->dataset};
    }
    return got;
}

static void close_slot(sk_reader *r)
{
    reads += sk_reader_global_reads(r);
    sk_reader_close(r);
}

/* Every position once, and each a distinct sample. */
static void check_epoch(const ident *seen, const unsigned char *mark, uint64_t total,
                        const char *where)
{
    uint64_t missing = 0;
    for (uint64_t p = 0; p < total; p++) missing += !mark[p];
    check(!missing, "%s: %llu of %llu positions never handed out", where,
          (unsigned long long)missing, (unsigned long long)total);
}

static int cmp_ident(const void *a, const void *b)
{
    const ident *x = a, *y = b;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

int main(int argc, char **argv)
{
    int i = 1, bad = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        if (!strcmp(argv[i], "--no-resume")) {
            no_resume = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--endpoint")) endpoint = argv[i + 1];
        else if (!strcmp(argv[i], "--window")) window = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--read-ahead")) read_ahead = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--samples")) samples_per_epoch = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--drift")) max_drift = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--points")) bad |= !parse_points(argv[i + 1]);
        else if (!strcmp(argv[i], "--resume")) bad |= !parse_resumes(argv[i + 1]);
        else if (!strcmp(argv[i], "--proportion")) {
            char *p = argv[i + 1], *end;
            for (int k = 0; k < 16 && *p; k++, p = *end ? end + 1 : end) {
                proportion[k] = strtod(p, &end);
                if (end == p) break;
            }
            mixing = 1;
        }
        else break;
    }
    if (i >= argc || batch < 1 || bad) {
        fprintf(stderr, "usage: order_grid [--endpoint URL] [--window N] [--seed S] [--batch B] "
                        "[--read-ahead BYTES] [--proportion P,P...] [--samples N] [--drift N] [--no-resume] "
                        "[--points R:W,...] [--resume R1:W1:R2:W2@STOP,...] URL...\n");
        return 2;
    }
    default_plan();
    urls = (const char *const *)argv + i;
    nurls = (size_t)(argc - i);

    sk_reader *r0 = open_slot(0, 1, 0, 1, 1);
    uint64_t total = sk_reader_epoch_samples(r0);
    ident *ref = calloc(total + 1, sizeof *ref), *seen = calloc(total + 1, sizeof *seen);
    unsigned char *mark = calloc(total + 1, 1);
    if (!ref || !seen || !mark) return 2;
    take(r0, 0, ref, mark, total, "reference");
    close_slot(r0);
    check_epoch(ref, mark, total, "reference");
    ident *sorted = malloc((total + 1) * sizeof *sorted);
    memcpy(sorted, ref, total * sizeof *ref);
    qsort(sorted, total, sizeof *sorted, cmp_ident);
    for (uint64_t p = 1; !mixing && p < total; p++)
        check(cmp_ident(&sorted[p - 1], &sorted[p]) != 0, "the sequence holds a sample twice");
    free(sorted);
    if (mixing) {
        /* each stream's share of the epoch, and of its first tenth */
        double psum = 0;
        for (size_t d = 0; d < nurls; d++) psum += proportion[d];
        for (int part = 0; part < 2; part++) {
            uint64_t n = part ? total / 10 : total, got[16] = {0};
            for (uint64_t p = 0; p < n; p++) got[ref[p].dataset < 16 ? ref[p].dataset : 15]++;
            for (size_t d = 0; d < nurls; d++) {
                double want = proportion[d] / psum, have = (double)got[d] / (double)n;
                printf("stream %zu: %.4f of %s%llu samples (asked %.4f)\n", d, have,
                       part ? "the first " : "", (unsigned long long)n, want);
                /* the whole epoch is exact; a prefix shows how whole
                 * shards in windows mix (printed, not checked) */
                if (!part)
                    check(have > want - 0.01 && have < want + 0.01,
                          "stream %zu: %.4f of the samples, asked %.4f", d, have, want);
            }
        }
        /* the drift: how far each stream's count in a prefix is from its
         * share of the prefix, at worst over every prefix */
        uint64_t got[16] = {0};
        double worst[16] = {0};
        uint64_t at[16] = {0};
        for (uint64_t p = 0; p < total; p++) {
            got[ref[p].dataset < 16 ? ref[p].dataset : 15]++;
            for (size_t d = 0; d < nurls && d < 16; d++) {
                double off = (double)got[d] - proportion[d] / psum * (double)(p + 1);
                if (off < 0) off = -off;
                if (off > worst[d]) worst[d] = off, at[d] = p + 1;
            }
        }
        for (size_t d = 0; d < nurls && d < 16; d++) {
            printf("stream %zu: drift at most %.1f samples (after %llu of %llu)\n", d, worst[d],
                   (unsigned long long)at[d], (unsigned long long)total);
            if (max_drift >= 0)
                check(worst[d] <= max_drift, "stream %zu: %.1f samples off its share after %llu, "
                      "more than %.0f", d, worst[d], (unsigned long long)at[d], max_drift);
        }
    }

    /* the grid */
    for (size_t a = 0; a < npoints; a++) {
        int R = points[a][0], W = points[a][1] ? points[a][1] : 1;
        char where[64];
        snprintf(where, sizeof where, "world %d x workers %d", R, points[a][1]);
        memset(mark, 0, total);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int r = 0; r < R; r++)
            for (int w = 0; w < W; w++) {
                sk_reader *s = open_slot(r, R, w, W, batch);
                uint64_t left = sk_reader_slot_left(s), got = take(s, 0, seen, mark, total, where);
                check(got == left, "%s: slot %d/%d handed out %llu, announced %llu", where, r, w,
                      (unsigned long long)got, (unsigned long long)left);
                lo = got < lo ? got : lo;
                hi = got > hi ? got : hi;
                close_slot(s);
            }
        check_epoch(seen, mark, total, where);
        check(hi - lo <= 1, "%s: slot counts from %llu to %llu", where, (unsigned long long)lo,
              (unsigned long long)hi);
        check(!memcmp(seen, ref, total * sizeof *ref), "%s: the global sequence differs", where);
    }

    uint64_t grid_reads = reads;
    /* elastic resume: (R1 x W1) consumes whole steps, (R2 x W2) finishes */
    for (size_t pi = 0; !no_resume && pi < nresumes; pi++) {
        const struct resume *v = &resumes[pi];
        int R1 = v->r1, W1 = v->w1 ? v->w1 : 1;
        int R2 = v->r2, W2 = v->w2 ? v->w2 : 1;
        char where[96];
        snprintf(where, sizeof where, "resume %dx%d -> %dx%d at %.0f%%", R1, v->w1, R2, v->w2,
                 v->stop * 100);
        memset(mark, 0, total);
        /* steps every rank completes: a whole number of batches */
        uint64_t per_rank = total / (uint64_t)R1;
        uint64_t steps = (uint64_t)(v->stop * (double)per_rank) / (uint64_t)batch;
        sk_reader_position pos = {0}, mine, again;
        sk_error e = SK_ERROR_INIT;
        for (int r = 0; r < R1; r++) {
            sk_reader **ws = calloc((size_t)W1, sizeof *ws);
            for (int w = 0; w < W1; w++) ws[w] = open_slot(r, R1, w, W1, batch);
            int last = -1;
            uint64_t consumed = 0;
            /* a DataLoader: batch after batch, worker after worker
             * (an exhausted worker's turn is skipped) */
            for (uint64_t t = 0; t < steps; t++) {
                int w = (int)(t % (uint64_t)W1);
                uint64_t got = take(ws[w], (uint64_t)batch, seen, mark, total, where);
                if (got) last = w;
                consumed += got;
            }
            /* what the job saves, from the rank's count; the worker
             * that handed the last batch knows the same */
            if (sk_reader_position_at(ws[0], consumed, &mine, &e)) die(where, &e);
            if (last >= 0 && sk_reader_get_position(ws[last], &again, &e)) die(where, &e);
            if (last >= 0)
                check(!memcmp(&mine, &again, sizeof mine), "%s: rank %d: the slot's position "
                      "(%llu) is not the rank's (%llu)", where, r,
                      (unsigned long long)again.consumed, (unsigned long long)mine.consumed);
            if (r == 0) pos = mine;
            check(!memcmp(&pos, &mine, sizeof mine), "%s: rank %d's position (%llu) is not "
                  "rank 0's (%llu)", where, r, (unsigned long long)mine.consumed,
                  (unsigned long long)pos.consumed);
            for (int w = 0; w < W1; w++) close_slot(ws[w]);
            free(ws);
        }
        for (int r = 0; r < R2; r++)
            for (int w = 0; w < W2; w++) {
                sk_reader *s = open_slot(r, R2, w, W2, batch);
                if (sk_reader_seek(s, &pos, &e)) die(where, &e);
                take(s, 0, seen, mark, total, where);
                close_slot(s);
            }
        check_epoch(seen, mark, total, where);
        check(!memcmp(seen, ref, total * sizeof *ref), "%s: the samples differ from the sequence",
              where);
    }

    /* the sequence's digest, to compare the same dataset in another place */
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t p = 0; p < total; p++) {
        h = (h ^ ref[p].shard) * 0x100000001b3ull;
        h = (h ^ ref[p].ordinal) * 0x100000001b3ull;
    }
    printf("samples=%llu sequence=%016llx reads_per_sample=%.3f failures=%d\n",
           (unsigned long long)total, (unsigned long long)h,
           (double)grid_reads / (double)(total * (1 + npoints)), failures);
    free(ref);
    free(seen);
    free(mark);
    return failures ? 1 : 0;
}
