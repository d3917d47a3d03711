/*
 * jpeg_check.c - does libjpeg-turbo decode this JPEG, completely and
 * without complaint?  Decodes every scanline with an error manager that
 * longjmps instead of exiting, and counts libjpeg's warnings (such as
 * "Premature end of JPEG file", which libjpeg papers over with grey) as
 * corruption: a training loader would get a damaged image.
 */
#include "core/internal.h"
#include "tools/verify_int.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

struct jerr {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int warned;
};

static void on_error(j_common_ptr c)
{
    struct jerr *e = (struct jerr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jump, 1);
}

static void on_message(j_common_ptr c, int level)
{
    struct jerr *e = (struct jerr *)c->err;
    if (level < 0 && !e->warned) { /* a warning: corrupt data libjpeg recovered from */
        (*c->err->format_message)(c, e->msg);
        e->warned = 1;
    }
}

int sk_jpeg_check(const void *data, size_t n, char *why, size_t cap)
{
    struct jpeg_decompress_struct d;
    struct jerr e;
    JSAMPARRAY row = NULL;
    memset(&e, 0, sizeof e);
    d.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = on_error;
    e.mgr.emit_message = on_message;
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&d);
        snprintf(why, cap, "%s", e.msg);
        return 1;
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, (const unsigned char *)data, (unsigned long)n);
    jpeg_read_header(&d, TRUE);
    d.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&d);
    row = (*d.mem->alloc_sarray)((j_common_ptr)&d, JPOOL_IMAGE,
                                 d.output_width * (JDIMENSION)d.output_components, 1);
    while (d.output_scanline < d.output_height && !e.warned) jpeg_read_scanlines(&d, row, 1);
    if (!e.warned) jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    if (e.warned) {
        snprintf(why, cap, "%s", e.msg);
        return 1;
    }
    return 0;
}

int sk_jpeg_conforms(const void *data, size_t n, const sk_image_options *io, char *why, size_t cap)
{
    struct jpeg_decompress_struct d;
    struct jerr e;
    memset(&e, 0, sizeof e);
    d.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = on_error;
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&d);
        snprintf(why, cap, "has no readable header");
        return 1;
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, (const unsigned char *)data, (unsigned long)n);
    jpeg_read_header(&d, TRUE);
    unsigned w = d.image_width, h = d.image_height, s = io->image_size;
    jpeg_destroy_decompress(&d);
    unsigned small = w < h ? w : h, large = w < h ? h : w;
    int ok, mode = io->resize_mode;
    const char *rule;
    if (mode == SK_RESIZE_KEEP_RATIO)
        ok = small == s || (io->resize_only_if_bigger && small < s), rule = "its smaller side";
    else if (mode == SK_RESIZE_KEEP_RATIO_LARGEST)
        ok = large == s || (io->resize_only_if_bigger && large < s), rule = "its larger side";
    else if (mode == SK_RESIZE_CENTER_CROP)
        ok = (w == s && h == s) || (io->resize_only_if_bigger && small <= s), rule = "a square of side";
    else if (mode == SK_RESIZE_BORDER)
        ok = (w == s && h == s) || (io->resize_only_if_bigger && large <= s), rule = "a square of side";
    else
        return 0;
    if (!ok) snprintf(why, cap, "is %ux%u, not %s %u", w, h, rule, s);
    return !ok;
}
