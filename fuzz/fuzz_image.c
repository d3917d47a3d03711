/* fuzz_image.c - one image member through the resize pipeline
 * (format/image.c): JPEG header, EXIF orientation, pixel cap, decode,
 * resample, encode.  A small pixel cap keeps each input fast; bad images
 * are a verdict, never a crash. */
#include "core/internal.h"
#include "format/image.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_image_options o;
    sk_image_options_init(&o);
    o.image_size = 32;
    o.max_pixels = 1 << 20;
    o.image_meta = 1;
    for (int mode = SK_RESIZE_KEEP_RATIO; mode <= SK_RESIZE_BORDER; mode += 3) {
        o.resize_mode = mode;
        sk_image_result r;
        sk_error err = SK_ERROR_INIT;
        if (sk_image_transform(&o, data, size, &r, &err)) continue;
        free(r.out);
    }
    return 0;
}
