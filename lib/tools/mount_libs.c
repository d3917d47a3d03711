/*
 * mount_libs.c - libfuse3 opened (dlopen, by its ABI soname) when a mount
 * starts, as s3/s3_libs.c opens libcurl: every other shardkit process
 * (`--version`, a local `get`, the Python binding) neither loads it nor
 * needs it installed, and startup_libs.sh keeps it that way.  The types
 * come from libfuse3-dev's headers at build time (FUSE_USE_VERSION 35).
 */
#include "tools/mount.h"

#include <dlfcn.h>
#include <stdio.h>

#define FUSE_SONAME "libfuse3.so.3"

sk_fuse_api sk_fuse;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[SK_ERROR_MAX] = "libfuse3 not loaded"; /* "" once loaded */

static void load(void)
{
    void *h = dlopen(FUSE_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error,
                 "cannot load %s (shardkit mount needs libfuse3; Debian: fuse3): %s", FUSE_SONAME,
                 dlerror());
        return;
    }
    int bad = 0;
#define F(field, name)                                                                       \
    if (!bad && !(*(void **)&sk_fuse.field = dlsym(h, name))) {                              \
        snprintf(load_error, sizeof load_error, "%s: no symbol %s", FUSE_SONAME, name);      \
        bad = 1;                                                                             \
    }
    F(session_new, "fuse_session_new");
    F(session_mount, "fuse_session_mount");
    F(session_unmount, "fuse_session_unmount");
    F(session_destroy, "fuse_session_destroy");
    /* the 3.2 ABI of the loop: struct fuse_loop_config {clone_fd, max_idle_threads} */
    F(session_loop_mt, "fuse_session_loop_mt_32");
    F(set_signal_handlers, "fuse_set_signal_handlers");
    F(remove_signal_handlers, "fuse_remove_signal_handlers");
    F(reply_err, "fuse_reply_err");
    F(reply_none, "fuse_reply_none");
    F(reply_entry, "fuse_reply_entry");
    F(reply_attr, "fuse_reply_attr");
    F(reply_open, "fuse_reply_open");
    F(reply_buf, "fuse_reply_buf");
    F(reply_statfs, "fuse_reply_statfs");
    F(add_direntry, "fuse_add_direntry");
    F(req_userdata, "fuse_req_userdata");
    F(opt_add_arg, "fuse_opt_add_arg");
    F(opt_free_args, "fuse_opt_free_args");
#undef F
    if (!bad) load_error[0] = 0;
}

int sk_fuse_load(sk_error *err)
{
    pthread_once(&once, load);
    SK_FAIL_IF(load_error[0], err, SK_E_IO, "%s", load_error);
    return SK_OK;
}
