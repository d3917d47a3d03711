/*
 * bench_time.c - GNU time's `-f '%e %U %S %M' -o FILE CMD...` to the
 * microsecond, for bench/bench_scale.sh (through bench/lib.sh's GNU_TIME).
 * GNU time prints seconds to 0.01, which is all of a run at 1,000 samples.
 * This reads the same rusage of the same wait4() (user and system time,
 * peak RSS in KiB of the largest process waited for) and a monotonic clock
 * around the child.  It is C, not a script, because Linux counts the peak
 * RSS of the image a child had before exec: a Python timer would put its
 * own 10 MiB under every figure.
 *   bench_time [-f '%e %U %S %M'] [-o FILE] CMD [ARG...]
 * Exit status: the command's (128+N when killed by signal N), 127 when it
 * cannot be started, 125 on a usage or timer error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double secs(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv)
{
    const char *out = NULL, *fmt = "%e %U %S %M";
    int i = 1;
    for (; i + 1 < argc && (!strcmp(argv[i], "-f") || !strcmp(argv[i], "-o")); i += 2) {
        if (argv[i][1] == 'f') fmt = argv[i + 1];
        else out = argv[i + 1];
    }
    if (i < argc && !strcmp(argv[i], "--")) i++;
    if (i >= argc || strcmp(fmt, "%e %U %S %M") != 0) {
        fprintf(stderr, "usage: bench_time [-f '%%e %%U %%S %%M'] [-o FILE] CMD [ARG...]\n");
        return 125;
    }
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) return perror("bench_time: fork"), 125;
    if (pid == 0) {
        execvp(argv[i], argv + i);
        fprintf(stderr, "bench_time: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return perror("bench_time: wait4"), 125;
    double wall = now() - t0;
    FILE *f = out ? fopen(out, "w") : stderr;
    if (!f) return perror(out), 125;
    fprintf(f, "%.6f %.6f %.6f %ld\n", wall, secs(ru.ru_utime), secs(ru.ru_stime), ru.ru_maxrss);
    if (out && fclose(f) != 0) return perror(out), 125;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
