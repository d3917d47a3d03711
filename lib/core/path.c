/*
 * path.c - the one way untrusted bytes become a local path.
 *
 * Archive member names, index keys and extensions, manifest URLs and S3
 * keys all come from outside; before any of them is joined under a
 * directory the user named, it goes through here.  A name is accepted only
 * as a relative path of ordinary components: no '/' at the start, no ".."
 * (nor "." or empty) component, no NUL byte, at most SK_NAME_COMPONENT_MAX
 * bytes a component and
 * SK_NAME_MAX in all.  So a joined path can never leave its directory,
 * whatever the name says; there is no normalisation to get wrong.
 *
 * Foreign tars are treated as GNU tar treats them on extraction: leading
 * '/' and "./" are stripped, leading "../" components are stripped too,
 * and a ".." anywhere else makes the member unusable (skipped with a
 * warning by the tools).  sk_name_strip says which happened.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Checks one component [p, p + n). */
static const char *component_problem(const char *p, size_t n)
{
    if (n == 0) return "an empty component (\"//\" or a trailing '/')";
    if (n == 1 && p[0] == '.') return "a \".\" component";
    if (n == 2 && p[0] == '.' && p[1] == '.') return "a \"..\" component";
    if (n > SK_NAME_COMPONENT_MAX) return "a component longer than 255 bytes";
    return NULL;
}

int sk_name_check(const char *name, size_t len, const char *what, sk_error *err)
{
    const char *why = NULL;
    if (!len) why = "it is empty";
    else if (len > SK_NAME_MAX) why = "it is longer than 4096 bytes";
    else if (name[0] == '/') why = "it is absolute";
    if (!why && memchr(name, 0, len)) why = "it holds a NUL byte";
    for (size_t s = 0; !why && s <= len;) {
        size_t e = s;
        while (e < len && name[e] != '/') e++;
        why = component_problem(name + s, e - s);
        s = e + 1;
    }
    if (!why) return SK_OK;
    /* the name itself goes into the message shortened and with control
     * bytes shown as '?', so a hostile name cannot garble the terminal */
    char shown[120];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 4 < sizeof shown; i++)
        shown[k++] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    if (k < len) shown[k++] = '.', shown[k++] = '.', shown[k++] = '.';
    shown[k] = 0;
    return sk_error_set(err, SK_E_CORRUPT, "%s '%s' is not a safe relative name: %s", what, shown, why);
}

int sk_ext_check(const char *ext, size_t len, const char *what, sk_error *err)
{
    for (size_t i = 0; i < len; i++)
        if (ext[i] == '/' || !ext[i])
            return sk_error_set(err, SK_E_CORRUPT, "%s: an extension holds '%s'", what,
                                ext[i] == '/' ? "/" : "a NUL byte");
    SK_FAIL_IF(len > SK_NAME_COMPONENT_MAX, err, SK_E_CORRUPT, "%s: an extension is longer than 255 bytes",
               what);
    return SK_OK;
}

int sk_name_strip(const char *name, size_t len, size_t *skip)
{
    size_t s = 0;
    int changed = 0;
    for (;;) { /* leading '/', "./" and "../", as GNU tar strips them */
        if (s < len && name[s] == '/') s++, changed = 1;
        else if (len - s >= 2 && name[s] == '.' && name[s + 1] == '/') s += 2; /* harmless */
        else if (len - s >= 3 && !memcmp(name + s, "../", 3)) s += 3, changed = 1;
        else break;
    }
    *skip = s;
    /* a ".." that is not leading: the member cannot be placed anywhere safe */
    for (size_t p = s; p < len;) {
        size_t e = p;
        while (e < len && name[e] != '/') e++;
        if (e - p == 2 && name[p] == '.' && name[p + 1] == '.') return -1;
        p = e + 1;
    }
    return changed;
}

int sk_path_join(const char *dir, const char *name, size_t len, const char *what, char **out,
                 sk_error *err)
{
    SK_GUARD(sk_name_check(name, len, what, err));
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    char *p = malloc(dl + 1 + len + 1);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    memcpy(p, dir, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, name, len);
    p[dl + 1 + len] = 0;
    *out = p;
    return SK_OK;
}

/* The real directory of path's parent (the file itself need not exist). */
static char *real_parent(const char *path)
{
    char *dir = sk_dir_of(path);
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    return real;
}

int sk_path_rel(const char *path, const char *dir, char *buf, size_t cap)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    const char *rel = path;
    if (strstr(path, "://") || strstr(dir, "://")) {
        /* a URL: relative only under the manifest's own prefix */
        if (dl && !strncmp(path, dir, dl) && path[dl] == '/') rel = path + dl + 1;
        return snprintf(buf, cap, "%s", rel) >= (int)cap ? -1 : 0;
    }
    if (!dl || (dl == 1 && dir[0] == '.')) {
        if (path[0] != '/') { /* the manifest is in the working directory */
            while (!strncmp(rel, "./", 2)) rel += 2;
            return snprintf(buf, cap, "%s", rel) >= (int)cap ? -1 : 0;
        }
    } else if (!strncmp(path, dir, dl) && path[dl] == '/' && !strstr(path + dl, "/../")) {
        return snprintf(buf, cap, "%s", path + dl + 1) >= (int)cap ? -1 : 0;
    }
    /* elsewhere: through the real directories, "../" up to what they share */
    char *pd = real_parent(path), *md = realpath(dl ? dir : ".", NULL);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int rc = -1;
    if (pd && md) {
        /* the bytes both share up to a whole component ("/a/b" and "/a/bc"
         * share "/a") */
        size_t i = 0, common = 0;
        while (pd[i] && pd[i] == md[i]) i++;
        if ((!pd[i] || pd[i] == '/') && (!md[i] || md[i] == '/')) common = i;
        else
            for (common = i; common && pd[common - 1] != '/';) common--;
        size_t k = 0;
        buf[0] = 0;
        for (const char *q = md + common; *q; q++) /* "../" for each component of md left */
            if (*q != '/' && (q == md + common || q[-1] == '/'))
                k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, "../");
        const char *down = pd + common;
        while (*down == '/') down++;
        if (k < cap) k += (size_t)snprintf(buf + k, cap - k, "%s%s%s", down, *down ? "/" : "", base);
        rc = k < cap ? 0 : -1;
    } else {
        rc = snprintf(buf, cap, "%s", path) >= (int)cap ? -1 : 0; /* not there: as given */
    }
    free(pd);
    free(md);
    return rc;
}
