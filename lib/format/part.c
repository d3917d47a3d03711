/*
 * part.c - scale-out with --part I/N: N copies of a tool (a Slurm job
 * array, a Kubernetes Indexed Job, an AWS Batch array job) each take a
 * disjoint, deterministic slice of the samples.
 *
 * A sample's part depends on its key alone, never on the listing order or
 * on which other samples exist, so:
 *   - every sample lands in exactly one part, however each copy lists or
 *     walks its input, and copies never need to talk to each other;
 *   - a tool that streams samples (`shard`) decides with one call per key;
 *   - a rerun of one failed copy (--resume) plans exactly the same slice.
 * The hash is fixed and documented (docs/scale-out.md) so that other
 * versions, platforms and implementations agree: FNV-1a 64 of the key's
 * bytes, then the murmur3 64-bit finaliser (FNV-1a alone mixes its low and
 * high bits poorly for keys that differ only in their last digits), and
 * part = (high 32 bits of the hash * N) >> 32, which is uniform without a
 * modulo.  Parts balance in bytes as well as in count when samples are
 * many: see "## scale-out" in docs/benchmarks.md for the measured spread.
 *
 * It knows keys and names only, so every job asks it: pack (its catalog
 * filtered by sk_part_filter, pack/catalog_group.c) and shard (one call per
 * sample, tools/shard_filter.c) alike.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ hash */

uint64_t sk_part_hash(const char *key, size_t key_len)
{
    uint64_t h = sk_fnv1a64(key, key_len);
    /* murmur3 fmix64 */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

int sk_part_of(const char *key, size_t key_len, int parts)
{
    if (parts <= 1) return 0;
    uint64_t hi = sk_part_hash(key, key_len) >> 32;
    return (int)((hi * (uint64_t)parts) >> 32);
}

/* ------------------------------------------------------------ parsing */

/* A decimal number 0..max with nothing else around it. */
static int parse_num(const char *s, long max, long *out)
{
    long v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > max) return -1;
    }
    *out = v;
    return 0;
}

static int env_num(const char *name, long *out, sk_error *err)
{
    const char *v = getenv(name);
    SK_FAIL_IF(parse_num(v, 0x7fffffffL, out), err, SK_E_USAGE,
               "--part auto: %s='%s' is not a non-negative integer", name, v ? v : "");
    return SK_OK;
}

static int is_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

/* Slurm numbers a job array's tasks with SLURM_ARRAY_TASK_ID; the array's
 * size is SLURM_ARRAY_TASK_COUNT (Slurm >= 20.11), or MAX - MIN + 1. */
static int from_slurm(int hint, long *part, long *parts, sk_error *err)
{
    long id, min = 0, max = -1, count = -1;
    SK_GUARD(env_num("SLURM_ARRAY_TASK_ID", &id, err));
    *part = id;
    if (hint > 0) { /* --parts wins: a rerun of one task (--array=2) still knows N */
        *parts = hint;
        SK_FAIL_IF(id >= hint, err, SK_E_USAGE,
                   "--part auto: SLURM_ARRAY_TASK_ID=%ld is not below --parts %d (number the "
                   "array tasks 0..%d)", id, hint, hint - 1);
        return SK_OK;
    }
    if (is_set("SLURM_ARRAY_TASK_MIN")) SK_GUARD(env_num("SLURM_ARRAY_TASK_MIN", &min, err));
    if (is_set("SLURM_ARRAY_TASK_MAX")) SK_GUARD(env_num("SLURM_ARRAY_TASK_MAX", &max, err));
    if (is_set("SLURM_ARRAY_TASK_COUNT")) SK_GUARD(env_num("SLURM_ARRAY_TASK_COUNT", &count, err));
    SK_FAIL_IF(count < 0 && max < 0, err, SK_E_USAGE,
               "--part auto: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor "
               "SLURM_ARRAY_TASK_MAX is; give --parts N");
    /* Parts are the tasks 0..N-1.  An array that starts elsewhere is most
     * often the rerun of a few tasks (sbatch --array=2), whose size is not
     * the number of parts: guessing would silently repartition. */
    SK_FAIL_IF(min != 0, err, SK_E_USAGE,
               "--part auto: SLURM_ARRAY_TASK_MIN=%ld, so this array is not tasks 0..N-1 (a rerun "
               "of some tasks, or a 1-based array?); give --parts N", min);
    if (max < 0) max = count - 1;
    SK_FAIL_IF(count >= 0 && count != max + 1, err, SK_E_USAGE,
               "--part auto: SLURM_ARRAY_TASK_COUNT=%ld but SLURM_ARRAY_TASK_MAX=%ld: the array "
               "has gaps or a step; give --parts N", count, max);
    *parts = max + 1;
    return SK_OK;
}

/* Kubernetes (JOB_COMPLETION_INDEX) and AWS Batch (AWS_BATCH_JOB_ARRAY_INDEX)
 * export the index only, so the count must come from --parts. */
static int from_index(const char *var, const char *what, int hint, long *part, long *parts,
                      sk_error *err)
{
    long id;
    SK_GUARD(env_num(var, &id, err));
    SK_FAIL_IF(hint <= 0, err, SK_E_USAGE,
               "--part auto: %s=%ld is set, but %s does not export the number of parts; give "
               "--parts N", var, id, what);
    SK_FAIL_IF(id >= hint, err, SK_E_USAGE, "--part auto: %s=%ld is not below --parts %d", var,
               id, hint);
    *part = id;
    *parts = hint;
    return SK_OK;
}

int sk_part_parse(const char *spec, int parts_hint, int *part, int *parts, sk_error *err)
{
    static const char *const vars[] = {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX",
                                       "AWS_BATCH_JOB_ARRAY_INDEX"};
    long i = -1, n = -1;
    SK_FAIL_IF(parts_hint < 0 || parts_hint > SK_PART_MAX, err, SK_E_USAGE,
               "--parts %d: want 1..%d", parts_hint, SK_PART_MAX);
    SK_FAIL_IF(!spec, err, SK_E_USAGE, "--part: no value; want I/N or auto");
    if (!strcmp(spec, "auto")) {
        int found = -1;
        for (int v = 0; v < (int)SK_ARRAY_LEN(vars); v++) {
            if (!is_set(vars[v])) continue;
            SK_FAIL_IF(found >= 0, err, SK_E_USAGE,
                       "--part auto: both %s and %s are set; give --part I/N", vars[found],
                       vars[v]);
            found = v;
        }
        SK_FAIL_IF(found < 0, err, SK_E_USAGE,
                   "--part auto: none of SLURM_ARRAY_TASK_ID (Slurm job array), "
                   "JOB_COMPLETION_INDEX (Kubernetes Indexed Job), AWS_BATCH_JOB_ARRAY_INDEX "
                   "(AWS Batch array job) is set; give --part I/N");
        if (found == 0) SK_GUARD(from_slurm(parts_hint, &i, &n, err));
        else if (found == 1)
            SK_GUARD(from_index(vars[1], "Kubernetes", parts_hint, &i, &n, err));
        else SK_GUARD(from_index(vars[2], "AWS Batch", parts_hint, &i, &n, err));
    } else {
        const char *slash = strchr(spec, '/');
        char num[32];
        SK_FAIL_IF(!slash || (size_t)(slash - spec) >= sizeof num, err, SK_E_USAGE,
                   "--part '%s': want I/N (parts are numbered 0..N-1) or auto", spec);
        memcpy(num, spec, (size_t)(slash - spec));
        num[slash - spec] = 0;
        SK_FAIL_IF(parse_num(num, SK_PART_MAX, &i) || parse_num(slash + 1, SK_PART_MAX, &n) ||
                       n < 1, err, SK_E_USAGE,
                   "--part '%s': want I/N with 0 <= I < N <= %d, or auto", spec, SK_PART_MAX);
        SK_FAIL_IF(i >= n, err, SK_E_USAGE,
                   "--part '%s': parts are numbered 0..%ld, so I must be below N", spec, n - 1);
        SK_FAIL_IF(parts_hint > 0 && parts_hint != n, err, SK_E_USAGE,
                   "--part '%s' disagrees with --parts %d", spec, parts_hint);
    }
    SK_FAIL_IF(n > SK_PART_MAX, err, SK_E_USAGE, "--part auto: %ld parts, more than %d", n,
               SK_PART_MAX);
    *part = (int)i;
    *parts = (int)n;
    return SK_OK;
}

/* -------------------------------------------------------------- names */

#define PART_FIELD "{part}"

int sk_part_name(const char *tmpl, int part, int parts, int required, char **out,
                 sk_error *err)
{
    *out = NULL;
    const char *hit = strstr(tmpl, PART_FIELD);
    SK_FAIL_IF(parts <= 0 && hit, err, SK_E_USAGE,
               "'%s': {part} in a name needs --part I/N", tmpl);
    SK_FAIL_IF(parts > 0 && required && !hit, err, SK_E_USAGE,
               "'%s' has no {part} field, so the %d parts would write shards of the same names; "
               "put {part} in it, e.g. train-{part}-%%06d.tar or part-{part}/train-%%06d.tar",
               tmpl, parts);
    SK_FAIL_IF(parts < 0 || parts > SK_PART_MAX, err, SK_E_USAGE, "%d parts: want 1..%d", parts,
               SK_PART_MAX);
    SK_FAIL_IF(parts > 0 && (part < 0 || part >= parts), err, SK_E_USAGE,
               "part %d is not in 0..%d", part, parts - 1);
    /* Zero padded to the width of the largest part number, so names sort
     * in part order (N = 4: 0..3; N = 16: 00..15). */
    char num[16];
    int width = snprintf(num, sizeof num, "%d", parts > 0 ? parts - 1 : 0);
    snprintf(num, sizeof num, "%0*d", width, part);
    size_t fields = 0, fl = strlen(PART_FIELD), nl = strlen(num);
    for (const char *p = hit; p; p = strstr(p + fl, PART_FIELD)) fields++;
    char *s = sk_xmalloc(strlen(tmpl) + fields * nl + 1, err), *o = s;
    if (!s) return SK_E_NOMEM;
    for (const char *p = tmpl; *p;) {
        if (!strncmp(p, PART_FIELD, fl)) {
            memcpy(o, num, nl);
            o += nl;
            p += fl;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    *out = s;
    return SK_OK;
}

int sk_part_output_names(const char *pattern, const char *manifest, int part, int parts,
                         char **pattern_out, char **manifest_out, sk_error *err)
{
    char *def = NULL;
    *manifest_out = NULL;
    SK_GUARD(sk_part_name(pattern, part, parts, 1, pattern_out, err));
    if (!manifest && parts > 0) {
        /* N parts writing one manifest.json would overwrite each other */
        const char *sl = strrchr(pattern, '/');
        int dl = sl ? (int)(sl - pattern + 1) : 0;
        if (asprintf(&def, "%.*smanifest-{part}.json", dl, pattern) < 0) def = NULL;
        if (!def) {
            free(*pattern_out);
            *pattern_out = NULL;
            return sk_error_set(err, SK_E_NOMEM, "out of memory");
        }
        manifest = def;
    }
    int rc = manifest ? sk_part_name(manifest, part, parts, 0, manifest_out, err) : SK_OK;
    free(def);
    if (rc) {
        free(*pattern_out);
        *pattern_out = NULL;
    }
    return rc;
}
