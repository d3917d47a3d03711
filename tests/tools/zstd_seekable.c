/*
 * zstd_seekable.c - writes a file in the zstd seekable format (independent
 * frames plus a seek table in a final skippable frame) from a plain file,
 * cutting a frame every CHUNK bytes, so tests can index .tar.zst shards
 * whose samples straddle frames.
 *   zstd_seekable CHUNK IN OUT [--checksums]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static void le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: zstd_seekable CHUNK IN OUT [--checksums]\n");
        return 2;
    }
    size_t chunk = strtoul(argv[1], NULL, 10);
    int sums = argc > 4 && !strcmp(argv[4], "--checksums");
    FILE *in = fopen(argv[2], "rb"), *out = fopen(argv[3], "wb");
    if (!in || !out || !chunk) {
        perror("zstd_seekable");
        return 1;
    }
    unsigned char *buf = malloc(chunk), *cbuf = malloc(ZSTD_compressBound(chunk));
    unsigned char *table = NULL;
    size_t nframes = 0, esize = sums ? 12 : 8, n;
    while ((n = fread(buf, 1, chunk, in)) > 0) {
        size_t c = ZSTD_compress(cbuf, ZSTD_compressBound(chunk), buf, n, 3);
        if (ZSTD_isError(c)) return 1;
        fwrite(cbuf, 1, c, out);
        table = realloc(table, (nframes + 1) * esize);
        le32(table + nframes * esize, (uint32_t)c);
        le32(table + nframes * esize + 4, (uint32_t)n);
        if (sums) le32(table + nframes * esize + 8, 0); /* not checked by readers here */
        nframes++;
    }
    unsigned char hdr[8], foot[9];
    uint32_t tsize = (uint32_t)(nframes * esize + 9);
    le32(hdr, 0x184D2A5Eu);
    le32(hdr + 4, tsize);
    le32(foot, (uint32_t)nframes);
    foot[4] = sums ? 0x80 : 0;
    le32(foot + 5, 0x8F92EAB1u);
    fwrite(hdr, 1, 8, out);
    fwrite(table, 1, nframes * esize, out);
    fwrite(foot, 1, 9, out);
    free(buf);
    free(cbuf);
    free(table);
    fclose(in);
    return fclose(out) != 0;
}
