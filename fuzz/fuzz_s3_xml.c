/* fuzz_s3_xml.c - the XML S3 answers with (s3/s3_xml.c, expat): a listing,
 * an error document and a multipart answer walked from any bytes. */
#include "s3/s3_internal.h"

static void cb(void *ud, int end, const char *name, const char *text)
{
    size_t *n = ud;
    *n += (size_t)end + (name ? strlen(name) : 0) + (text ? strlen(text) : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = 0;
    sk_error err = SK_ERROR_INIT;
    (void)sk_s3_xml_parse((const char *)data, size, cb, &n, &err);
    char code[128], msg[512];
    sk_s3_xml_error((const char *)data, size, code, sizeof code, msg, sizeof msg);
    return 0;
}
