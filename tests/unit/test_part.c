/* test_part.c - --part I/N (lib/pack/part.c): the documented hash and partition
 * function (fixed values, so a change that would move samples between
 * parts fails here), parsing "I/N" and "auto" from each scheduler's
 * variables (Slurm, Kubernetes Indexed Job, AWS Batch) with the errors that
 * name the variable at fault, and {part} in file names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

static const char *const sched_vars[] = {
    "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX",
};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sched_vars / sizeof *sched_vars; i++) unsetenv(sched_vars[i]);
    return 0;
}

/* ------------------------------------------------------------------ hash */

static void test_hash_is_fixed(void **state)
{
    (void)state;
    /* Values from an independent implementation (docs/scale-out.md). */
    assert_true(sk_part_hash("", 0) == 0xefd01f60ba992926ULL);
    assert_true(sk_part_hash("a", 1) == 0x82a2a958a9bece5bULL);
    assert_true(sk_part_hash("n00000/00000000", 15) == 0xf30eda87017f3ba6ULL);
    assert_true(sk_part_hash("n00099/00099999", 15) == 0xcea7edd3ec39066dULL);
    assert_int_equal(sk_part_of("a", 1, 3), 1);
    assert_int_equal(sk_part_of("a", 1, 7), 3);
    assert_int_equal(sk_part_of("a", 1, 1000), 510);
    assert_int_equal(sk_part_of("n00099/00099999", 15, 7), 5);
    assert_int_equal(sk_part_of("n00000/00000000", 15, 1000), 949);
    /* the key's bytes only: no NUL terminator is read */
    assert_true(sk_part_hash("ab", 1) == sk_part_hash("a", 1));
}

static void test_part_of_range_and_spread(void **state)
{
    (void)state;
    assert_int_equal(sk_part_of("x", 1, 0), 0);
    assert_int_equal(sk_part_of("x", 1, 1), 0);
    static const int ns[] = {2, 3, 7, 64};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        int n = ns[t], count[64] = {0};
        char key[32];
        for (int i = 0; i < 70000; i++) {
            int k = snprintf(key, sizeof key, "n%05d/%08d", i / 1000, i);
            int p = sk_part_of(key, (size_t)k, n);
            assert_true(p >= 0 && p < n);
            count[p]++;
        }
        for (int p = 0; p < n; p++) /* within 10% of the mean; sequential keys too */
            if (count[p] < 70000 / n * 9 / 10 || count[p] > 70000 / n * 11 / 10)
                fail_msg("N=%d: part %d has %d of 70000 keys", n, p, count[p]);
    }
}

/* ----------------------------------------------------------------- parse */

static void parse_ok(const char *spec, int hint, int want_part, int want_parts)
{
    int part = -1, parts = -1;
    sk_error err = SK_ERROR_INIT;
    if (sk_part_parse(spec, hint, &part, &parts, &err))
        fail_msg("--part %s (--parts %d): refused: %s", spec, hint, err.msg);
    if (part != want_part || parts != want_parts)
        fail_msg("--part %s (--parts %d): got %d/%d, want %d/%d", spec, hint, part, parts,
                 want_part, want_parts);
}

static void parse_bad(const char *spec, int hint, const char *want_in_msg)
{
    int part = -1, parts = -1;
    sk_error err = SK_ERROR_INIT;
    int rc = sk_part_parse(spec, hint, &part, &parts, &err);
    if (rc != SK_E_USAGE)
        fail_msg("--part %s (--parts %d): want SK_E_USAGE, got %d (%d/%d)", spec ? spec : "NULL",
                 hint, rc, part, parts);
    if (!strstr(err.msg, want_in_msg))
        fail_msg("--part %s: message lacks '%s': %s", spec ? spec : "NULL", want_in_msg, err.msg);
}

static void test_parse_explicit(void **state)
{
    (void)state;
    parse_ok("0/1", 0, 0, 1);
    parse_ok("0/4", 0, 0, 4);
    parse_ok("3/4", 0, 3, 4);
    parse_ok("3/4", 4, 3, 4);
    parse_ok("65535/65536", 0, 65535, 65536);
    parse_bad("4/4", 0, "numbered 0..3");
    parse_bad("1/0", 0, "'1/0'");
    parse_bad("-1/4", 0, "'-1/4'");
    parse_bad("1/", 0, "'1/'");
    parse_bad("/4", 0, "'/4'");
    parse_bad("1/4x", 0, "'1/4x'");
    parse_bad("1 /4", 0, "'1 /4'");
    parse_bad("3", 0, "want I/N");
    parse_bad("a/b", 0, "'a/b'");
    parse_bad("0/65537", 0, "65536");
    parse_bad("99999999999999999999/4", 0, "want I/N");
    parse_bad("1/4", 5, "disagrees with --parts 5");
    parse_bad(NULL, 0, "want I/N or auto");
    parse_bad("1/4", -1, "--parts -1");
}

static void test_auto_none(void **state)
{
    (void)state;
    parse_bad("auto", 0, "none of SLURM_ARRAY_TASK_ID");
    parse_bad("auto", 4, "JOB_COMPLETION_INDEX");
}

static void test_auto_slurm(void **state)
{
    (void)state;
    /* sbatch --array=0-3: Slurm >= 20.11 sets all four */
    setenv("SLURM_ARRAY_TASK_ID", "2", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
    setenv("SLURM_ARRAY_TASK_MAX", "3", 1);
    parse_ok("auto", 0, 2, 4);
    parse_ok("auto", 4, 2, 4);
    /* --parts wins over the array's size (an array submitted in pieces) */
    parse_ok("auto", 8, 2, 8);
    parse_bad("auto", 2, "SLURM_ARRAY_TASK_ID=2 is not below --parts 2");
    /* older Slurm: MIN/MAX only */
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    parse_ok("auto", 0, 2, 4);
    /* COUNT only */
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    unsetenv("SLURM_ARRAY_TASK_MIN");
    unsetenv("SLURM_ARRAY_TASK_MAX");
    parse_ok("auto", 0, 2, 4);
    /* the rerun of one task (sbatch --array=2): the array's size is 1, so
     * only --parts can say N */
    setenv("SLURM_ARRAY_TASK_COUNT", "1", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "2", 1);
    setenv("SLURM_ARRAY_TASK_MAX", "2", 1);
    parse_bad("auto", 0, "SLURM_ARRAY_TASK_MIN=2");
    parse_ok("auto", 4, 2, 4);
    /* a 1-based array */
    setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
    setenv("SLURM_ARRAY_TASK_MAX", "4", 1);
    parse_bad("auto", 0, "1-based");
    /* gaps or a step: --array=0-6:2 */
    setenv("SLURM_ARRAY_TASK_ID", "2", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
    setenv("SLURM_ARRAY_TASK_MAX", "6", 1);
    parse_bad("auto", 0, "gaps");
    /* not an array at all, or a damaged variable */
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    unsetenv("SLURM_ARRAY_TASK_MIN");
    unsetenv("SLURM_ARRAY_TASK_MAX");
    parse_bad("auto", 0, "neither SLURM_ARRAY_TASK_COUNT");
    setenv("SLURM_ARRAY_TASK_ID", "2x", 1);
    parse_bad("auto", 4, "SLURM_ARRAY_TASK_ID='2x'");
    setenv("SLURM_ARRAY_TASK_ID", "-1", 1);
    parse_bad("auto", 4, "SLURM_ARRAY_TASK_ID='-1'");
    setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "many", 1);
    parse_bad("auto", 0, "SLURM_ARRAY_TASK_COUNT='many'");
}

static void test_auto_kubernetes(void **state)
{
    (void)state;
    setenv("JOB_COMPLETION_INDEX", "5", 1);
    parse_ok("auto", 7, 5, 7);
    parse_bad("auto", 0, "JOB_COMPLETION_INDEX=5 is set, but Kubernetes");
    parse_bad("auto", 5, "JOB_COMPLETION_INDEX=5 is not below --parts 5");
    setenv("JOB_COMPLETION_INDEX", "", 1); /* empty counts as unset */
    parse_bad("auto", 7, "none of");
}

static void test_auto_aws_batch(void **state)
{
    (void)state;
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "0", 1);
    parse_ok("auto", 3, 0, 3);
    parse_bad("auto", 0, "AWS Batch does not export");
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "3", 1);
    parse_bad("auto", 3, "AWS_BATCH_JOB_ARRAY_INDEX=3 is not below --parts 3");
}

static void test_auto_two_schedulers(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "1", 1);
    parse_bad("auto", 4, "both SLURM_ARRAY_TASK_ID and AWS_BATCH_JOB_ARRAY_INDEX");
    /* an explicit I/N ignores the environment */
    parse_ok("3/4", 0, 3, 4);
}

/* ----------------------------------------------------------------- names */

static void name_ok(const char *tmpl, int part, int parts, int required, const char *want)
{
    char *out = NULL;
    sk_error err = SK_ERROR_INIT;
    if (sk_part_name(tmpl, part, parts, required, &out, &err))
        fail_msg("'%s' %d/%d: refused: %s", tmpl, part, parts, err.msg);
    assert_string_equal(out, want);
    free(out);
}

static void name_bad(const char *tmpl, int part, int parts, int required, const char *want_in_msg)
{
    char *out = NULL;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_part_name(tmpl, part, parts, required, &out, &err), SK_E_USAGE);
    assert_null(out);
    if (!strstr(err.msg, want_in_msg)) fail_msg("'%s': message lacks '%s': %s", tmpl, want_in_msg, err.msg);
}

static void test_names(void **state)
{
    (void)state;
    name_ok("train-{part}-%06d.tar", 3, 4, 1, "train-3-%06d.tar");
    name_ok("train-{part}-%06d.tar", 0, 1, 1, "train-0-%06d.tar");
    name_ok("train-{part}-%06d.tar", 7, 16, 1, "train-07-%06d.tar");
    name_ok("train-{part}-%06d.tar", 15, 16, 1, "train-15-%06d.tar");
    name_ok("p{part}/t-{part}-%d.tar", 42, 1000, 1, "p042/t-042-%d.tar");
    name_ok("out/train-%06d.tar", 0, 0, 1, "out/train-%06d.tar"); /* not split */
    name_ok("manifest.json", 2, 4, 0, "manifest.json");           /* not required */
    name_ok("{part", 2, 4, 0, "{part");
    name_bad("out/train-%06d.tar", 1, 4, 1, "has no {part} field");
    name_bad("out/{part}-%06d.tar", 0, 0, 1, "needs --part");
    name_bad("out/{part}-%06d.tar", 4, 4, 1, "part 4 is not in 0..3");
    name_bad("out/{part}-%06d.tar", 0, SK_PART_MAX + 1, 1, "want 1..65536");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_is_fixed),
        cmocka_unit_test(test_part_of_range_and_spread),
        cmocka_unit_test_setup(test_parse_explicit, clear_env),
        cmocka_unit_test_setup(test_auto_none, clear_env),
        cmocka_unit_test_setup(test_auto_slurm, clear_env),
        cmocka_unit_test_setup(test_auto_kubernetes, clear_env),
        cmocka_unit_test_setup(test_auto_aws_batch, clear_env),
        cmocka_unit_test_setup(test_auto_two_schedulers, clear_env),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
