/*
 * infiles.h - the local input shards a run reads a second time (the
 * shuffle's references: io/shard_shuffle.c, opened by tools/shard_direct.c).
 * Internal.
 *
 * A file is kept open from the first pass to the second, so the bytes read
 * again are the same file's, whatever is renamed over its name meanwhile.
 * Past the process's descriptor limit the least recently opened ones are
 * closed and opened again by name when next read, and then must still be
 * the same file (device, inode, size): anything else is an error naming it.
 */
#ifndef SK_INFILES_H
#define SK_INFILES_H

#include "core/internal.h"

typedef struct sk_infiles sk_infiles;

/* max_open: files kept open at once (0: half of RLIMIT_NOFILE) */
int sk_infiles_new(sk_infiles **out, size_t max_open, sk_error *err);
void sk_infiles_free(sk_infiles *t);
/* Takes fd (open on path, a regular file; closed here on failure too);
 * *no is its number for sk_infiles_fd. */
int sk_infiles_add(sk_infiles *t, const char *path, int fd, uint32_t *no, sk_error *err);
/* The file's descriptor (valid until the next call), and its name. */
int sk_infiles_fd(sk_infiles *t, uint32_t no, int *fd, const char **path, sk_error *err);

#endif
