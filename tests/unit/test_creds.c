/* test_creds.c - the credential sources that need no server: environment,
 * shared credentials file, config file with profiles, their order, and an
 * explicit profile passing over the environment as the aws cli does; the
 * Expiration times of temporary credentials and when the provider fetches
 * them anew.  The HTTP sources (container, IMDSv2) and a refresh that
 * switches keys mid-upload are tested end to end in tests/e2e/s3_creds.sh
 * against local servers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sk_assert.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardkit.h"
#include "s3/s3_internal.h" /* the provider and the time parser are internal */

#include <time.h>

static char dir[] = "/tmp/sk_creds_XXXXXX";
static char cred_path[256], conf_path[256];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir)) return -1;
    snprintf(cred_path, sizeof cred_path, "%s/credentials", dir);
    snprintf(conf_path, sizeof conf_path, "%s/config", dir);
    FILE *f = fopen(cred_path, "w");
    fprintf(f, "# comment\n[default]\naws_access_key_id = AKFILEDEFAULT\naws_secret_access_key = sdefault\n\n"
               "[work]\naws_access_key_id=AKFILEWORK\naws_secret_access_key=swork\naws_session_token = tokwork\n");
    fclose(f);
    f = fopen(conf_path, "w");
    fprintf(f, "[default]\nregion = eu-west-1\n[profile cfgonly]\nregion=ap-south-1\n"
               "aws_access_key_id = AKCONFIG\naws_secret_access_key = sconfig\n");
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred_path, 1);
    setenv("AWS_CONFIG_FILE", conf_path, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(cred_path), unlink(conf_path), rmdir(dir);
    return 0;
}

static void load(const char *profile, sk_creds *c)
{
    sk_error err = SK_ERROR_INIT;
    int rc = sk_creds_load(c, profile, &err);
    if (rc) fail_msg("%s", err.msg);
}

static void test_environment_first(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
    setenv("AWS_SESSION_TOKEN", "tokenv", 1);
    sk_creds c;
    load(NULL, &c);
    assert_string_equal(c.access_key, "AKENV");
    assert_string_equal(c.token, "tokenv");
    assert_string_equal(c.source, "environment");
    assert_string_equal(c.region, "eu-west-1");
    sk_creds_release(&c);
    /* an explicit profile passes over the environment */
    load("work", &c);
    assert_string_equal(c.access_key, "AKFILEWORK");
    assert_string_equal(c.token, "tokwork");
    sk_creds_release(&c);
    unsetenv("AWS_ACCESS_KEY_ID"), unsetenv("AWS_SECRET_ACCESS_KEY"), unsetenv("AWS_SESSION_TOKEN");
}

static void test_files_and_profiles(void **state)
{
    (void)state;
    sk_creds c;
    load(NULL, &c);
    assert_string_equal(c.access_key, "AKFILEDEFAULT");
    assert_string_equal(c.secret_key, "sdefault");
    assert_null(c.token);
    assert_string_equal(c.source, "shared credentials file");
    sk_creds_release(&c);
    setenv("AWS_PROFILE", "cfgonly", 1);
    load(NULL, &c);
    assert_string_equal(c.access_key, "AKCONFIG");
    assert_string_equal(c.source, "config file");
    assert_string_equal(c.region, "ap-south-1");
    sk_creds_release(&c);
    unsetenv("AWS_PROFILE");
}

static void test_missing(void **state)
{
    (void)state;
    sk_creds c;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_creds_load(&c, "nosuch", &err), SK_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "nosuch"));
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
    assert_int_equal(sk_creds_load(&c, NULL, &err), SK_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "no AWS credentials"));
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred_path, 1);
    setenv("AWS_CONFIG_FILE", conf_path, 1);
}

static void test_parse_time(void **state)
{
    (void)state;
    assert_true(sk_creds_parse_time("2026-11-22T01:02:03Z") == 1795309323);
    assert_true(sk_creds_parse_time("2026-11-22T01:02:03.123Z") == 1795309323);
    assert_true(sk_creds_parse_time("2026-11-22T03:02:03+02:00") == 1795309323);
    assert_true(sk_creds_parse_time("2026-11-22T01:02:03") == 1795309323);
    assert_true(sk_creds_parse_time("tomorrow") == 0);
    assert_true(sk_creds_parse_time("2026-11-22T01:02:03 junk") == 0);
    assert_true(sk_creds_parse_time(NULL) == 0);
}

static void set_expiration(long long secs_from_now)
{
    char t[40];
    time_t when = time(NULL) + secs_from_now;
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
    setenv("AWS_CREDENTIAL_EXPIRATION", t, 1);
}

/* The provider refreshes inside botocore's windows (15 min advisory, 10 min
 * mandatory), not outside; expired credentials that no refresh renews are
 * an error that says so; given credentials are never refreshed. */
static void test_provider_refresh(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
    sk_error err = SK_ERROR_INIT;
    sk_creds_provider p;

    set_expiration(3600); /* an hour left: used as they are */
    assert_sk_ok(sk_creds_provider_init(&p, NULL, NULL, 0, &err), err);
    const sk_creds *c = sk_creds_provider_lock(&p, &err);
    assert_non_null(c);
    assert_string_equal(c->access_key, "AKENV");
    sk_creds_provider_unlock(&p);
    assert_int_equal((int)p.refreshes, 0);
    sk_creds_provider_release(&p);

    set_expiration(12 * 60); /* advisory window: fetched anew before signing */
    assert_sk_ok(sk_creds_provider_init(&p, NULL, NULL, 0, &err), err);
    setenv("AWS_ACCESS_KEY_ID", "AKNEW", 1);
    set_expiration(3600);
    c = sk_creds_provider_lock(&p, &err);
    assert_non_null(c);
    assert_string_equal(c->access_key, "AKNEW");
    sk_creds_provider_unlock(&p);
    assert_int_equal((int)p.refreshes, 1);
    c = sk_creds_provider_lock(&p, &err); /* an hour left again: no refresh */
    sk_creds_provider_unlock(&p);
    assert_int_equal((int)p.refreshes, 1);
    sk_creds_provider_release(&p);

    set_expiration(-60); /* expired, and the source has nothing newer */
    assert_sk_ok(sk_creds_provider_init(&p, NULL, NULL, 0, &err), err);
    assert_null(sk_creds_provider_lock(&p, &err));
    assert_non_null(strstr(err.msg, "expired at"));
    assert_null(strstr(err.msg, "senv"));
    /* asked again at once: still an error (not the expired set), no fetch */
    err.msg[0] = 0;
    assert_null(sk_creds_provider_lock(&p, &err));
    assert_non_null(strstr(err.msg, "expired at"));
    sk_creds_provider_release(&p);

    sk_creds given = SK_CREDS_INIT;
    given.access_key = "AKGIVEN", given.secret_key = "sgiven";
    assert_sk_ok(sk_creds_provider_init(&p, &given, NULL, 0, &err), err);
    c = sk_creds_provider_lock(&p, &err);
    assert_non_null(c);
    assert_string_equal(c->access_key, "AKGIVEN");
    sk_creds_provider_unlock(&p);
    sk_creds_provider_release(&p);
    unsetenv("AWS_ACCESS_KEY_ID"), unsetenv("AWS_SECRET_ACCESS_KEY"), unsetenv("AWS_CREDENTIAL_EXPIRATION");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environment_first),
        cmocka_unit_test(test_files_and_profiles),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_provider_refresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
