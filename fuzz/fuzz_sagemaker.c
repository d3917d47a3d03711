/* fuzz_sagemaker.c - SageMaker manifests (pack/sagemaker.c) from any bytes:
 * a ManifestFile (a JSON array read one element at a time) or an
 * augmented manifest (JSON Lines, each "-ref" an s3:// URI, the other
 * attributes spooled as a .json member), parsed and checked without a
 * request.  A manifest is refused with an error that says why, or taken:
 * every source it makes is an s3:// one, and every member it spools (the
 * labels) has a name pack can write (the target traps otherwise). */
#include "pack/catalog.h"
#include "format/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    sk_catalog c;
    sk_catalog_init(&c);
    c.env_ready = 1; /* sources may be made; no object is sized or fetched */
    sk_error err = SK_ERROR_INIT;
    int rc = sk_sagemaker_read(&c, f, "fuzz.manifest", 0, &err);
    if (rc && !err.msg[0]) __builtin_trap(); /* a refusal always says why */
    for (size_t i = 0; i < c.nsrcs; i++)
        if (c.srcs[i].remote && strncasecmp(c.srcs[i].base, "s3://", 5)) /* schemes: any case */
            __builtin_trap();
    char name[SK_TAR_NAME_MAX + 1];
    for (size_t i = 0; i < c.nitems; i++) {
        sk_item_name(&c, &c.items[i], name);
        if (!sk_catalog_name_usable(name)) __builtin_trap();
    }
    fclose(f);
    sk_catalog_release(&c);
    return 0;
}
