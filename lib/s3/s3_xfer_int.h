/*
 * s3_xfer_int.h - what the transfer engine's files share: a transfer
 * (sk_s3_xfer), its objects (items) and the slots their parts travel in.
 * s3_xfer.c is the caller's side (setup, the queue, resume, waiting),
 * s3_xfer_chain.c the engine thread's (slots, parts sent and completed, the
 * confirmation chain), s3_writer.c the streaming writer on top of both.
 * Everything shared between the two threads is guarded by x->mu.
 * Internal to libshardkit.
 */
#ifndef SK_S3_XFER_INT_H
#define SK_S3_XFER_INT_H

#include "s3/s3_internal.h"

#define MIN_PART (5ull << 20)
#define MAX_BUFFERED 16 /* part buffers in flight unless max_parts_in_flight says */
#define MAX_PARTS 10000

enum kind { K_FILE, K_COPY, K_XCOPY, K_STREAM };
enum stage { S_QUEUED, S_RUNNING, S_DONE };

typedef struct item item;
typedef struct slot slot;
typedef struct sk_s3_xfer sk_s3_xfer;

struct item {
    sk_s3_xfer *x;
    enum kind kind;
    enum stage stage;
    char *src, *bucket, *key;  /* src: a path or an s3:// URL, for messages */
    sk_s3 *src_s3;
    char *sbucket, *skey;
    int fd;
    uint64_t size, part_size;
    int size_known;    /* copies: the size (and src_crc) came with the item, no HEAD */
    int nparts, cap_parts;
    int multipart, outstanding, all_submitted, chain_started;
    char upload_id[512];
    sk_s3_part *parts;
    uint32_t *crcs;
    uint32_t crc;      /* whole object, when known */
    int crc_known;
    char src_crc[24];  /* the source's checksum (copies) */
    char src_etag[80]; /* the source's ETag (copies) */
    char md5[33];      /* hex MD5 of a small single PUT's bytes, or "": its ETag confirms it */
    int parts_reused;
    int rc;
    sk_error err;
    sk_s3_req req;     /* the chain: PUT/Complete, HEAD, verify, abort */
    sk_buf body;
    uint32_t verify_crc;
    int batched;       /* added by sk_s3_xfer_add_*: reported and freed by wait */
    item *next;        /* in x's queue of items not started, then its done queue */
};

struct slot {
    sk_s3_req r;       /* first: the engine hands back &r */
    sk_s3_req get;     /* cross-endpoint copies: the GET that fills buf */
    sk_s3_xfer *x;
    unsigned char *buf;
    size_t cap, len;
    item *it;
    int part;          /* index into it->parts, -1 for a single PUT */
    int busy;
    sk_buf resp;
};

struct sk_s3_xfer {
    sk_s3 *s3;
    sk_s3_xfer_opts o;
    sk_s3_xfer_done done;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    int nslots;
    int nbufs, max_bufs; /* slots holding a buffer, and how many may: memory is max_bufs x part size */
    /* Each item is in at most one of two queues, so every step of wait is
     * O(1) per object however many are planned: queued (added, not yet
     * started) and done (finished, not yet reported); `active` counts the
     * started ones not yet reported. */
    item *head, *tail;
    item *done_head, *done_tail;
    size_t active;
    int fatal;
    uint64_t bytes_done, bytes_total;
    uint64_t progress_ms; /* when progress was last called */
    unsigned char *scratch; /* the producer's CRC32C pass over file parts */
};

#define SCRATCH_SIZE (256u << 10) /* fits in L2: the CRC reads what pread just wrote */

/* s3_xfer_chain.c */
/* Records the first failure of an item (x->mu held). */
void sk_xfer_item_fail(item *it, const sk_error *e, int code);
/* A free slot, waiting for one; need > 0: with a buffer of need bytes
 * (NULL when it cannot be had). */
slot *sk_xfer_get_slot(sk_s3_xfer *x, size_t need);
void sk_xfer_release_slot(slot *s);
int sk_xfer_read_full(int fd, void *buf, size_t n, uint64_t off, const char *path, sk_error *err);
uint64_t sk_xfer_part_size(const sk_s3_xfer *x, uint64_t size);
void sk_xfer_md5_hex(const void *p, size_t n, char out[33]);
/* The end of an item: reported to the caller, then freed or queued as done. */
void sk_xfer_finished(item *it);
/* After the last part: Complete, then the HEAD (called without x->mu). */
void sk_xfer_chain_finish(item *it);
/* Whether the item's parts are all in (x->mu held): 1 to call chain_finish. */
int sk_xfer_settle(item *it);
/* Engine callbacks: a part PUT or copy is done; a cross-endpoint GET is done. */
void sk_xfer_part_done(sk_s3_req *r);
void sk_xfer_xget_done(sk_s3_req *r);
/* Sends the slot's buffer as part idx (-1: a single PUT); returns its CRC32C. */
uint32_t sk_xfer_send_slot(item *it, slot *s, int idx);
/* Sends a file range as part idx, reading it once for its CRC32C. */
int sk_xfer_send_file_range(item *it, int idx, uint64_t off, size_t len, uint32_t *crc, sk_error *err);

/* s3_xfer.c */
int sk_xfer_grow_parts(item *it, int n, sk_error *err);
item *sk_xfer_item_new(sk_s3_xfer *x, enum kind k, const char *src, const char *bucket,
                       const char *key, sk_error *err);
void sk_xfer_item_free(item *it);

#endif
