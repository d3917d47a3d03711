/*
 * mkcorpus.c - the project's own deterministic WebDataset-style corpus
 * generator, for `make demo`, the e2e tests and the benchmarks.
 *
 *   mkcorpus DIR --samples N [--seed S] [--per-dir D] [--pool P]
 *
 * Creates DIR/nDDDDD/IIIIIIII.{jpg,cls,json}, the same shape as
 * ../shared/bench/make-corpus: N samples, D per class folder (the label is the
 * folder number).  Every .jpg is a byte copy of one of P distinct real
 * baseline JPEGs, encoded once per run with libjpeg-turbo at quality 85 from
 * synthetic images (per-channel gradients plus noise, 64..384 px a side,
 * about 3..40 KB).  The .cls holds the label as decimal text, the .json a
 * small object {"key", "label", "width", "height"}.
 *
 * Deterministic: the same seed and options (and the same libjpeg build) give
 * a byte-identical tree; all randomness comes from splitmix64 below.  Only the
 * C standard library, POSIX and libjpeg are used.  Prints one line
 * "samples=N files=F bytes=B seconds=T" on success; errors name the file.
 * Exit status: 0 success, 1 error, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

static const char usage_text[] =
    "usage: mkcorpus DIR --samples N [--seed S] [--per-dir D] [--pool P]\n"
    "\n"
    "Create a deterministic WebDataset-style tree DIR/nDDDDD/IIIIIIII.{jpg,cls,json}.\n"
    "\n"
    "  -n, --samples N   number of samples to create (3 files each; required)\n"
    "  -s, --seed S      seed; same seed and options give a byte-identical tree (default 0)\n"
    "  -d, --per-dir D   samples per class folder nDDDDD/; label = folder number (default 1000)\n"
    "  -p, --pool P      distinct JPEGs generated and reused (default 256; alias --jpeg-pool)\n"
    "  -h, --help        show this help\n"
    "\n"
    "DIR must not exist or be empty.  Prints: samples= files= bytes= seconds=\n";

/* ------------------------------------------------------------------ errors */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mkcorpus: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mkcorpus: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\n", stderr);
    fputs(usage_text, stderr);
    va_end(ap);
    exit(2);
}

/* -------------------------------------------------------------------- PRNG */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same everywhere. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A generator for one purpose (stream tag) and index, independent of others. */
static uint64_t rng_seed(uint64_t seed, uint64_t tag, uint64_t i)
{
    uint64_t s = seed;
    uint64_t a = splitmix64(&s) ^ tag;
    s = a;
    uint64_t b = splitmix64(&s) ^ i;
    s = b;
    return splitmix64(&s);
}

/* Uniform integer in [lo, hi) without modulo bias worth caring about here
 * (hi - lo is tiny next to 2^64, and determinism is what matters). */
static unsigned rng_range(uint64_t *state, unsigned lo, unsigned hi)
{
    return lo + (unsigned)(splitmix64(state) % (hi - lo));
}

enum { TAG_IMAGE = 1, TAG_PICK = 2 };

/* ------------------------------------------------------------- JPEG pool */

struct pool_jpeg {
    unsigned width, height;
    unsigned char *data;
    unsigned long size;
};

struct jpeg_fail {
    struct jpeg_error_mgr pub;
    unsigned image;
};

static void jpeg_fail_exit(j_common_ptr cinfo)
{
    char msg[JMSG_LENGTH_MAX];
    struct jpeg_fail *f = (struct jpeg_fail *)cinfo->err;
    cinfo->err->format_message(cinfo, msg);
    die("libjpeg: encoding pool image %u: %s", f->image, msg);
}

/* Fills rgb (w*h*3 bytes) with pool image i: horizontal and vertical
 * per-channel gradients (0..70 each) plus uniform noise (0..amp <= 100), so
 * every sample stays <= 240.  Noise is stronger on small images so that the
 * JPEGs land at roughly 3..40 KB. */
static void make_image(uint64_t seed, unsigned i, unsigned *wp, unsigned *hp, unsigned char **rgbp)
{
    uint64_t st = rng_seed(seed, TAG_IMAGE, i);
    unsigned w = rng_range(&st, 64, 385), h = rng_range(&st, 64, 385);
    unsigned amp = rng_range(&st, 20, 40) + 800000u / (w * h);
    if (amp > 100)
        amp = 100;
    unsigned hs[3], he[3], vs[3], ve[3];
    for (int c = 0; c < 3; c++) {
        hs[c] = rng_range(&st, 0, 71);
        he[c] = rng_range(&st, 0, 71);
    }
    for (int c = 0; c < 3; c++) {
        vs[c] = rng_range(&st, 0, 71);
        ve[c] = rng_range(&st, 0, 71);
    }
    size_t n = (size_t)w * h * 3;
    unsigned char *rgb = malloc(n);
    if (!rgb)
        die("out of memory for a %ux%u image", w, h);
    unsigned char row[385 * 3];
    for (unsigned x = 0; x < w; x++)
        for (int c = 0; c < 3; c++)
            row[x * 3 + c] = (unsigned char)((hs[c] * (w - 1 - x) + he[c] * x) / (w - 1));
    uint64_t bits = 0;
    int left = 0;
    unsigned char *p = rgb;
    for (unsigned y = 0; y < h; y++) {
        unsigned col[3];
        for (int c = 0; c < 3; c++)
            col[c] = (vs[c] * (h - 1 - y) + ve[c] * y) / (h - 1);
        for (unsigned x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                if (left == 0) {
                    bits = splitmix64(&st);
                    left = 8;
                }
                unsigned v = (unsigned)(bits & 0xff);
                bits >>= 8;
                left--;
                *p++ = (unsigned char)(row[x * 3 + c] + col[c] + v * (amp + 1) / 256);
            }
    }
    *wp = w;
    *hp = h;
    *rgbp = rgb;
}

static void make_jpeg(uint64_t seed, unsigned i, struct pool_jpeg *out)
{
    unsigned w, h;
    unsigned char *rgb;
    make_image(seed, i, &w, &h, &rgb);

    struct jpeg_compress_struct cinfo;
    struct jpeg_fail jerr;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jpeg_fail_exit;
    jerr.image = i;
    jpeg_create_compress(&cinfo);

    unsigned char *buf = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&cinfo, &buf, &size);
    cinfo.image_width = w;
    cinfo.image_height = h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 85, TRUE);
    cinfo.dct_method = JDCT_ISLOW; /* exact integer DCT: same bytes on every CPU */
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW r = rgb + (size_t)cinfo.next_scanline * w * 3;
        jpeg_write_scanlines(&cinfo, &r, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(rgb);

    out->width = w;
    out->height = h;
    out->data = buf;
    out->size = size;
}

/* ------------------------------------------------------------------ output */

static void write_all(int dfd, const char *dir, const char *name, const void *data, size_t n)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("%s/%s: cannot create: %s", dir, name, strerror(errno));
    const char *p = data;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            die("%s/%s: write failed: %s", dir, name, k < 0 ? strerror(errno) : "wrote nothing");
        p += k;
        n -= (size_t)k;
    }
    if (close(fd) != 0)
        die("%s/%s: close failed: %s", dir, name, strerror(errno));
}

/* mkdir -p: makes path and any missing parents. */
static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755);
}

/* Makes DIR (and its parents) if missing; refuses a DIR that holds anything. */
static void prepare_root(const char *root)
{
    if (mkdir_p(root) == 0)
        return;
    if (errno != EEXIST)
        die("%s: cannot create directory: %s", root, strerror(errno));
    DIR *d = opendir(root);
    if (!d)
        die("%s: cannot open directory: %s", root, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            closedir(d);
            usage_error("%s exists and is not empty", root);
        }
    }
    closedir(d);
}

/* ------------------------------------------------------------------ options */

static uint64_t parse_num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    if (!s)
        usage_error("%s needs a value", opt);
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
        usage_error("%s: '%s' is not a number in %" PRIu64 "..%" PRIu64, opt, s, min, max);
    return v;
}

int main(int argc, char **argv)
{
    const char *root = NULL;
    uint64_t samples = 0, seed = 0, per_dir = 1000, npool = 256;
    int have_samples = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        char opt[64];
        /* accept --opt=value as well as --opt value */
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq && (size_t)(eq - a) < sizeof opt) {
            memcpy(opt, a, (size_t)(eq - a));
            opt[eq - a] = 0;
            a = opt;
            v = eq + 1;
        }
#define VALUE() (v ? v : (i + 1 < argc ? argv[++i] : NULL))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--samples")) {
            samples = parse_num(a, VALUE(), 0, 99999999);
            have_samples = 1;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            seed = parse_num(a, VALUE(), 0, UINT64_MAX);
        } else if (!strcmp(a, "-d") || !strcmp(a, "--per-dir")) {
            per_dir = parse_num(a, VALUE(), 1, 99999999);
        } else if (!strcmp(a, "-p") || !strcmp(a, "--pool") || !strcmp(a, "--jpeg-pool")) {
            npool = parse_num(a, VALUE(), 1, 100000);
        } else if (a[0] == '-' && a[1]) {
            usage_error("unknown option '%s'", argv[i]);
        } else if (!root) {
            root = a;
        } else {
            usage_error("more than one DIR given ('%s', '%s')", root, a);
        }
#undef VALUE
    }
    if (!root)
        usage_error("no DIR given");
    if (!have_samples)
        usage_error("--samples N is required");
    if ((samples + per_dir - 1) / per_dir > 100000)
        usage_error("--samples/--per-dir gives more than 100000 class folders");

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    prepare_root(root);

    struct pool_jpeg *pool = calloc(npool, sizeof *pool);
    if (!pool)
        die("out of memory for a pool of %" PRIu64 " JPEGs", npool);
    for (unsigned i = 0; i < npool; i++)
        make_jpeg(seed, i, &pool[i]);

    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        die("%s: cannot open directory: %s", root, strerror(errno));

    uint64_t nbytes = 0;
    int dfd = -1;
    char dir[1024], cls[32], name[32], label[32], meta[192];
    for (uint64_t i = 0; i < samples; i++) {
        uint64_t d = i / per_dir;
        snprintf(cls, sizeof cls, "n%05" PRIu64, d);
        if (i % per_dir == 0) {
            if (dfd >= 0)
                close(dfd);
            snprintf(dir, sizeof dir, "%s/%s", root, cls);
            if (mkdirat(rootfd, cls, 0755) != 0)
                die("%s: cannot create directory: %s", dir, strerror(errno));
            dfd = openat(rootfd, cls, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd < 0)
                die("%s: cannot open directory: %s", dir, strerror(errno));
        }
        uint64_t st = rng_seed(seed, TAG_PICK, i);
        const struct pool_jpeg *j = &pool[splitmix64(&st) % npool];
        int ln = snprintf(label, sizeof label, "%" PRIu64, d);
        int mn = snprintf(meta, sizeof meta,
                          "{\"key\": \"%s/%08" PRIu64 "\", \"label\": %" PRIu64
                          ", \"width\": %u, \"height\": %u}",
                          cls, i, d, j->width, j->height);

        snprintf(name, sizeof name, "%08" PRIu64 ".jpg", i);
        write_all(dfd, dir, name, j->data, j->size);
        snprintf(name, sizeof name, "%08" PRIu64 ".cls", i);
        write_all(dfd, dir, name, label, (size_t)ln);
        snprintf(name, sizeof name, "%08" PRIu64 ".json", i);
        write_all(dfd, dir, name, meta, (size_t)mn);
        nbytes += j->size + (uint64_t)ln + (uint64_t)mn;
    }
    if (dfd >= 0)
        close(dfd);
    close(rootfd);
    for (unsigned i = 0; i < npool; i++)
        free(pool[i].data);
    free(pool);

    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("samples=%" PRIu64 " files=%" PRIu64 " bytes=%" PRIu64 " seconds=%.2f\n",
           samples, 3 * samples, nbytes, secs);
    if (fflush(stdout) != 0 || ferror(stdout))
        die("stdout: write failed: %s", strerror(errno));
    return 0;
}
