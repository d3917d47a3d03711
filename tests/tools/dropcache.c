/*
 * dropcache.c - evicts the named files from the page cache
 * (posix_fadvise POSIX_FADV_DONTNEED after fdatasync), for the cold rows
 * of bench/bench_index.sh: unlike `echo 3 > /proc/sys/vm/drop_caches` it
 * needs no root and leaves the rest of a shared machine's cache alone.
 * With -c it evicts nothing and prints how many of each file's pages are
 * cached (mincore): what a cold run read, or that an eviction worked.
 *   dropcache [-c] FILE...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static long cached_pages(int fd, off_t size)
{
    if (!size) return 0;
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return -1;
    long ps = sysconf(_SC_PAGESIZE), n = (long)((size + ps - 1) / ps), c = 0;
    unsigned char v[4096];
    for (long at = 0; at < n; at += (long)sizeof v) {
        long k = n - at < (long)sizeof v ? n - at : (long)sizeof v;
        if (mincore((char *)p + at * ps, (size_t)(k * ps > size - at * ps ? size - at * ps : k * ps), v)) {
            c = -1;
            break;
        }
        for (long i = 0; i < k; i++) c += v[i] & 1;
    }
    munmap(p, (size_t)size);
    return c;
}

int main(int argc, char **argv)
{
    int check = argc > 1 && !strcmp(argv[1], "-c"), bad = 0;
    for (int i = 1 + check; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb)) {
            fprintf(stderr, "dropcache: %s: %s\n", argv[i], strerror(errno));
            bad = 1;
            if (fd >= 0) close(fd);
            continue;
        }
        int rc = 0;
        if (!check) rc = fdatasync(fd) ? -1 : posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (rc) {
            fprintf(stderr, "dropcache: %s: %s\n", argv[i], strerror(rc > 0 ? rc : errno));
            bad = 1;
        }
        if (check) printf("%s: %ld of %lld pages cached\n", argv[i], cached_pages(fd, sb.st_size),
                          (long long)((sb.st_size + 4095) / 4096));
        close(fd);
    }
    return bad;
}
