/*
 * jpeg_head.c - a JPEG's dimensions from its first bytes: libjpeg-turbo's
 * jpeg_read_header over a memory source, no decoding.  `stats --images`
 * reads a few KiB of each JPEG member and asks here; when the header
 * (SOF marker) lies past those bytes - a large EXIF or ICC segment first -
 * libjpeg reports the premature end as warning JWRN_JPEG_EOF, and the
 * caller reads more and asks again.
 */
#include "tools/stats.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdio.h>

struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int eof; /* the data ended before the header did */
};

static void on_error(j_common_ptr c)
{
    longjmp(((struct jerr *)c->err)->jump, 1);
}

static void on_message(j_common_ptr c, int level)
{
    struct jerr *e = (struct jerr *)c->err;
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) e->eof = 1;
}

int sk_jpeg_dims(const void *data, size_t n, unsigned *w, unsigned *h, char *why, size_t cap)
{
    struct jpeg_decompress_struct c;
    struct jerr e;
    memset(&e, 0, sizeof e);
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = on_error;
    e.pub.emit_message = on_message;
    if (setjmp(e.jump)) {
        int more = e.eof;
        if (!more && why) {
            char msg[JMSG_LENGTH_MAX];
            e.pub.format_message((j_common_ptr)&c, msg);
            snprintf(why, cap, "%s", msg);
        }
        jpeg_destroy_decompress(&c);
        return more ? 1 : -1;
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, (const unsigned char *)data, (unsigned long)n);
    int r = jpeg_read_header(&c, TRUE);
    int rc = 0;
    if (e.eof) rc = 1;
    else if (r != JPEG_HEADER_OK || !c.image_width || !c.image_height) {
        if (why) snprintf(why, cap, "no image in the JPEG header");
        rc = -1;
    } else {
        *w = c.image_width;
        *h = c.image_height;
    }
    jpeg_destroy_decompress(&c);
    return rc;
}
