/*
 * creds.c - AWS credentials, looked for in the aws cli's order:
 *   1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
 *      (skipped when a profile is named explicitly, as the aws cli does);
 *   2. the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials);
 *   3. the config file (AWS_CONFIG_FILE, ~/.aws/config; "[profile NAME]");
 *   4. container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or
 *      _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]);
 *   5. EC2 instance metadata with an IMDSv2 token, unless
 *      AWS_EC2_METADATA_DISABLED=true.
 * Test hooks: AWS_EC2_METADATA_SERVICE_ENDPOINT (the aws cli's own setting)
 * and SHARDKIT_CONTAINER_CREDENTIALS_HOST replace the link-local addresses.
 * Secrets are copied into the struct and never formatted into a message.
 *
 * Temporary credentials (container, instance metadata, or the environment
 * with AWS_CREDENTIAL_EXPIRATION) carry an Expiration.  A client holds them
 * in an sk_creds_provider, which fetches them anew before a signing that
 * falls inside botocore's windows: 15 minutes before the expiration
 * (advisory: a failure keeps the current ones, tried again 30 s later) and
 * 10 minutes before it (mandatory: tried before every signing, at most
 * every 5 s; a failure is an error once the credentials have expired).  An
 * upload that runs for hours thus never sends an expired token.
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void sk_creds_release(sk_creds *c)
{
    if (!c) return;
    if (c->secret_key) memset(c->secret_key, 0, strlen(c->secret_key));
    free(c->access_key), free(c->secret_key), free(c->token), free(c->region);
    memset(c, 0, sizeof *c);
}

static int set_creds(sk_creds *c, const char *ak, const char *sk, const char *tok,
                     const char *source)
{
    c->access_key = strdup(ak);
    c->secret_key = strdup(sk);
    c->token = tok && *tok ? strdup(tok) : NULL;
    snprintf(c->source, sizeof c->source, "%s", source);
    return c->access_key && c->secret_key ? 0 : SK_E_NOMEM;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* Values of one section of an ini file; the keys we know. */
typedef struct ini_vals {
    char ak[256], sk[256], tok[4096], region[64];
    int max_attempts;
    int found; /* the section exists */
    /* endpoints, as the aws cli v2 reads them: a profile's endpoint_url,
     * services (the name of a [services NAME] section) and
     * ignore_configured_endpoint_urls; a services section's nested
     * "s3 =\n  endpoint_url = URL" */
    char endpoint[1024], services[256], s3_endpoint[1024];
    int ignore_endpoints;
} ini_vals;

static void ini_read(const char *path, const char *section, ini_vals *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[8192], parent[64] = "";
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        int nested = line[0] == ' ' || line[0] == '\t'; /* a sub-key of the key above */
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';') continue;
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (e) *e = 0;
            in = !strcmp(trim(s + 1), section);
            v->found |= in;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!in || !eq) continue;
        *eq = 0;
        char *k = trim(s), *val = trim(eq + 1);
        if (nested) {
            if (!strcmp(parent, "s3") && !strcmp(k, "endpoint_url"))
                snprintf(v->s3_endpoint, sizeof v->s3_endpoint, "%s", val);
            continue;
        }
        snprintf(parent, sizeof parent, "%s", *val ? "" : k);
        if (!strcmp(k, "endpoint_url")) snprintf(v->endpoint, sizeof v->endpoint, "%s", val);
        else if (!strcmp(k, "services")) snprintf(v->services, sizeof v->services, "%s", val);
        else if (!strcmp(k, "ignore_configured_endpoint_urls")) v->ignore_endpoints = !strcasecmp(val, "true");
        else if (!strcmp(k, "aws_access_key_id")) snprintf(v->ak, sizeof v->ak, "%s", val);
        else if (!strcmp(k, "aws_secret_access_key")) snprintf(v->sk, sizeof v->sk, "%s", val);
        else if (!strcmp(k, "aws_session_token")) snprintf(v->tok, sizeof v->tok, "%s", val);
        else if (!strcmp(k, "region")) snprintf(v->region, sizeof v->region, "%s", val);
        else if (!strcmp(k, "max_attempts")) { /* the aws cli's retry setting */
            char *end;
            long n = strtol(val, &end, 10);
            if (!*end && n >= 1 && n <= 100) v->max_attempts = (int)n;
        }
    }
    fclose(f);
}

static void aws_path(char *out, size_t cap, const char *env, const char *name)
{
    const char *e = getenv(env);
    const char *home = getenv("HOME");
    if (e && *e) snprintf(out, cap, "%s", e);
    else snprintf(out, cap, "%s/.aws/%s", home ? home : "", name);
}

int sk_creds_config_endpoint(const char *profile, char *out, size_t cap)
{
    if (!profile || !*profile) profile = getenv("AWS_PROFILE");
    if (!profile || !*profile) profile = "default";
    char conf_path[1024], sect[300];
    aws_path(conf_path, sizeof conf_path, "AWS_CONFIG_FILE", "config");
    if (!strcmp(profile, "default")) snprintf(sect, sizeof sect, "default");
    else snprintf(sect, sizeof sect, "profile %s", profile);
    ini_vals pv = {0}, sv = {0};
    ini_read(conf_path, sect, &pv);
    *out = 0;
    if (pv.ignore_endpoints) return 1;
    if (pv.services[0]) {
        snprintf(sect, sizeof sect, "services %s", pv.services);
        ini_read(conf_path, sect, &sv);
    }
    /* the service's own endpoint before the profile's, as the aws cli */
    snprintf(out, cap, "%s", sv.s3_endpoint[0] ? sv.s3_endpoint : pv.endpoint);
    return 0;
}

/* "2026-11-22T01:02:03Z" (fractions and a +hh:mm offset allowed) as
 * seconds since the epoch; 0 when absent or not understood. */
int64_t sk_creds_parse_time(const char *s)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6) return 0;
    const char *p = s + n;
    if (*p == '.') for (p++; *p >= '0' && *p <= '9'; p++) ;
    int off = 0;
    if ((*p == '+' || *p == '-') && p[1] && p[2]) {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) < 1) return 0;
        off = (*p == '-' ? -1 : 1) * (oh * 3600 + om * 60);
    } else if (*p && *p != 'Z' && *p != 'z') {
        return 0;
    }
    struct tm tm = {0};
    tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
    tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
    return (int64_t)timegm(&tm) - off;
}

/* The credentials JSON of container and instance metadata endpoints. */
static int from_json(sk_creds *c, const sk_buf *b, const char *source, const char *url,
                     int64_t *expires, sk_error *err)
{
    json_error_t je;
    json_t *j = json_loadb(b->p, b->len, 0, &je);
    SK_FAIL_IF(!j, err, SK_E_REMOTE, "%s: credentials answer is not JSON", url);
    const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *tok = json_string_value(json_object_get(j, "Token"));
    int rc = 0;
    if (!ak || !sk) rc = sk_error_set(err, SK_E_REMOTE, "%s: no AccessKeyId/SecretAccessKey in the answer", url);
    else if (set_creds(c, ak, sk, tok, source)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) *expires = sk_creds_parse_time(json_string_value(json_object_get(j, "Expiration")));
    json_decref(j);
    return rc;
}

static int from_container(sk_creds *c, int64_t *expires, sk_error *err)
{
    const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    char url[2048];
    if (rel && *rel) {
        const char *host = getenv("SHARDKIT_CONTAINER_CREDENTIALS_HOST");
        snprintf(url, sizeof url, "%s%s", host && *host ? host : "http://169.254.170.2", rel);
    } else if (full && *full) {
        snprintf(url, sizeof url, "%s", full);
    } else {
        return SK_E_NOTFOUND;
    }
    char auth[4200] = "";
    const char *tf = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *tok = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    if (tf && *tf) {
        FILE *f = fopen(tf, "r");
        char t[4096] = "";
        SK_FAIL_IF(!f, err, SK_E_IO, "%s: %s", tf, strerror(errno));
        size_t n = fread(t, 1, sizeof t - 1, f);
        fclose(f);
        t[n] = 0;
        snprintf(auth, sizeof auth, "Authorization: %s", trim(t));
    } else if (tok && *tok) {
        snprintf(auth, sizeof auth, "Authorization: %s", tok);
    }
    const char *hdrs[] = {auth[0] ? auth : NULL, NULL};
    sk_buf b = {0};
    long status;
    int rc = sk_http_fetch("GET", url, hdrs, 2000, &b, &status, err);
    if (!rc && status != 200)
        rc = sk_error_set(err, SK_E_REMOTE, "container credentials %s: HTTP %ld", url, status);
    if (!rc) rc = from_json(c, &b, "container credentials", url, expires, err);
    sk_buf_free(&b);
    return rc;
}

static int from_imds(sk_creds *c, int64_t *expires, sk_error *err)
{
    const char *dis = getenv("AWS_EC2_METADATA_DISABLED");
    if (dis && !strcasecmp(dis, "true")) return SK_E_NOTFOUND;
    const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    char base[512], url[1024], tokhdr[1200] = "";
    snprintf(base, sizeof base, "%s", ep && *ep ? ep : "http://169.254.169.254");
    size_t bl = strlen(base);
    if (bl && base[bl - 1] == '/') base[bl - 1] = 0;
    sk_buf b = {0};
    long status = 0;
    int rc;
    /* IMDSv2: a session token first; an endpoint that refuses it (v1 only) is
     * still asked without one, as the aws cli does. */
    snprintf(url, sizeof url, "%s/latest/api/token", base);
    const char *th[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
    rc = sk_http_fetch("PUT", url, th, 1000, &b, &status, err);
    if (rc) goto out; /* nothing listening: not on EC2 */
    if (status == 200) snprintf(tokhdr, sizeof tokhdr, "X-aws-ec2-metadata-token: %s", trim(b.p));
    const char *hh[] = {tokhdr[0] ? tokhdr : NULL, NULL};
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    rc = sk_http_fetch("GET", url, hh, 1000, &b, &status, err);
    if (rc) goto out;
    if (status != 200) {
        rc = sk_error_set(err, SK_E_NOTFOUND, "instance metadata %s: HTTP %ld (no role attached?)", url, status);
        goto out;
    }
    char role[256];
    snprintf(role, sizeof role, "%s", trim(b.p));
    char *nl = strchr(role, '\n');
    if (nl) *nl = 0;
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role);
    rc = sk_http_fetch("GET", url, hh, 1000, &b, &status, err);
    if (!rc && status != 200)
        rc = sk_error_set(err, SK_E_REMOTE, "instance metadata %s: HTTP %ld", url, status);
    if (!rc) rc = from_json(c, &b, "instance metadata", url, expires, err);
out:
    sk_buf_free(&b);
    return rc;
}

int sk_creds_load(sk_creds *out, const char *profile, sk_error *err)
{
    int64_t expires;
    return sk_creds_load_exp(out, profile, &expires, err);
}

int sk_creds_load_exp(sk_creds *out, const char *profile, int64_t *expires, sk_error *err)
{
    memset(out, 0, sizeof *out);
    *expires = 0;
    int explicit_profile = profile && *profile;
    if (!explicit_profile) profile = getenv("AWS_PROFILE");
    if (!profile || !*profile) profile = "default";

    char cred_path[1024], conf_path[1024], sect[300];
    aws_path(cred_path, sizeof cred_path, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    aws_path(conf_path, sizeof conf_path, "AWS_CONFIG_FILE", "config");
    ini_vals cv = {0}, fv = {0};
    ini_read(cred_path, profile, &cv);
    if (!strcmp(profile, "default")) snprintf(sect, sizeof sect, "default");
    else snprintf(sect, sizeof sect, "profile %s", profile);
    ini_read(conf_path, sect, &fv);
    if (fv.region[0]) out->region = strdup(fv.region);
    out->max_attempts = fv.max_attempts;

    int rc;
    const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
    if (!explicit_profile && ak && *ak && sk && *sk) {
        rc = set_creds(out, ak, sk, getenv("AWS_SESSION_TOKEN"), "environment");
        *expires = sk_creds_parse_time(getenv("AWS_CREDENTIAL_EXPIRATION")); /* as botocore */
        goto done;
    }
    if (cv.ak[0] && cv.sk[0]) {
        rc = set_creds(out, cv.ak, cv.sk, cv.tok, "shared credentials file");
        goto done;
    }
    if (fv.ak[0] && fv.sk[0]) {
        rc = set_creds(out, fv.ak, fv.sk, fv.tok, "config file");
        goto done;
    }
    SK_FAIL_IF(explicit_profile && !cv.found && !fv.found, err, SK_E_NOTFOUND,
               "profile '%s' is in neither %s nor %s", profile, cred_path, conf_path);
    sk_error e2 = SK_ERROR_INIT;
    rc = from_container(out, expires, &e2);
    if (rc != SK_E_NOTFOUND) {
        if (rc) {
            sk_creds_release(out);
            return sk_error_set(err, rc, "%s", e2.msg);
        }
        goto done;
    }
    rc = from_imds(out, expires, &e2);
    if (!rc) goto done;
    {
        char *region = out->region;
        out->region = NULL;
        sk_creds_release(out);
        out->region = region;
    }
    memset(&cv, 0, sizeof cv), memset(&fv, 0, sizeof fv);
    return sk_error_set(err, SK_E_NOTFOUND,
                        "no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY, or add profile '%s' to %s, or run where "
                        "container or instance credentials are available",
                        profile, cred_path);
done:
    memset(&cv, 0, sizeof cv), memset(&fv, 0, sizeof fv);
    if (rc) {
        sk_creds_release(out);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------ refresh */

#define ADVISORY_S (15 * 60)  /* botocore's _DEFAULT_ADVISORY_REFRESH_TIMEOUT */
#define MANDATORY_S (10 * 60) /* botocore's _DEFAULT_MANDATORY_REFRESH_TIMEOUT */
#define ADVISORY_RETRY_S 30
#define MANDATORY_RETRY_S 5

int sk_creds_provider_init(sk_creds_provider *p, const sk_creds *given, const char *profile,
                           int verbose, sk_error *err)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->verbose = verbose;
    if (!given) {
        if (profile && *profile && !(p->profile = strdup(profile)))
            return sk_error_set(err, SK_E_NOMEM, "out of memory");
        p->refreshable = 1;
        return sk_creds_load_exp(&p->cur, profile, &p->expires, err);
    }
    /* The caller's own credentials: theirs to renew (a new client). */
    int rc = given->access_key && given->secret_key ? 0 : SK_E_USAGE;
    if (rc) sk_error_set(err, rc, "credentials given without a key");
    p->cur.access_key = given->access_key ? strdup(given->access_key) : NULL;
    p->cur.secret_key = given->secret_key ? strdup(given->secret_key) : NULL;
    p->cur.token = given->token ? strdup(given->token) : NULL;
    p->cur.region = given->region ? strdup(given->region) : NULL;
    snprintf(p->cur.source, sizeof p->cur.source, "%s", given->source[0] ? given->source : "given");
    return rc;
}

void sk_creds_provider_release(sk_creds_provider *p)
{
    sk_creds_release(&p->cur);
    free(p->profile);
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

static void fmt_time(int64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int expired_error(const sk_creds_provider *p, sk_error *err)
{
    char when[32];
    fmt_time(p->expires, when, sizeof when);
    return sk_error_set(err, SK_E_REMOTE, "credentials from the %s expired at %s and could not be refreshed: %s",
                        p->cur.source, when, p->last_err);
}

/* Fetches anew when the expiration is near (under p->mu). */
static int maybe_refresh(sk_creds_provider *p, sk_error *err)
{
    if (!p->refreshable || !p->expires) return 0;
    int64_t now = (int64_t)time(NULL), left = p->expires - now;
    if (left >= ADVISORY_S) return 0;
    if (now < p->next_try) /* a fetch failed moments ago: do not hammer the endpoint */
        return left > 0 ? 0 : expired_error(p, err);
    int mandatory = left < MANDATORY_S;
    sk_creds fresh;
    int64_t exp = 0;
    sk_error e = SK_ERROR_INIT;
    int rc = sk_creds_load_exp(&fresh, p->profile, &exp, &e);
    if (!rc && exp && exp <= now) {
        rc = sk_error_set(&e, SK_E_REMOTE, "the new ones from the %s have expired too", fresh.source);
        sk_creds_release(&fresh);
    }
    if (!rc) {
        char *region = p->cur.region; /* the region was settled when the client started */
        p->cur.region = NULL;
        sk_creds_release(&p->cur);
        p->cur = fresh;
        free(p->cur.region);
        p->cur.region = region;
        p->expires = exp;
        /* a source that keeps answering credentials inside the window is
         * asked again at most every 5 s, not before every request */
        p->next_try = exp && exp - now < ADVISORY_S ? now + MANDATORY_RETRY_S : 0;
        if (exp && p->next_try > exp) p->next_try = exp;
        p->refreshes++;
        if (p->verbose) {
            char when[32] = "never";
            if (exp) fmt_time(exp, when, sizeof when);
            fprintf(stderr, "s3: credentials refreshed from %s (they expire %s)\n", p->cur.source, when);
        }
        return 0;
    }
    p->next_try = now + (mandatory ? MANDATORY_RETRY_S : ADVISORY_RETRY_S);
    snprintf(p->last_err, sizeof p->last_err, "%s", e.msg);
    if (left <= 0) return expired_error(p, err);
    /* still valid: keep them, as botocore does in its advisory window */
    if (p->verbose)
        fprintf(stderr, "s3: refreshing credentials failed (%s); the current ones are valid for %lld s more\n",
                e.msg, (long long)left);
    return 0;
}

const sk_creds *sk_creds_provider_lock(sk_creds_provider *p, sk_error *err)
{
    pthread_mutex_lock(&p->mu);
    int rc = maybe_refresh(p, err);
    if (rc) {
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    return &p->cur;
}

void sk_creds_provider_unlock(sk_creds_provider *p) { pthread_mutex_unlock(&p->mu); }
