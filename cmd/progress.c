/*
 * progress.c - the progress line and the summary line every long-running
 * tool (pack, shard, index, verify, upload) shows on a terminal, so that
 * they all say the same things in the same units: done/total (or done and
 * a rate when the total is not known yet, never a made-up ETA), shards
 * written, bytes, rate, elapsed; then one summary line.  Nothing at all
 * when stderr is not a terminal or -q was given: a log gets results only.
 */
#include "cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *cmd_bytes(uint64_t b, char *out, size_t cap)
{
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (b < 1024) {
        snprintf(out, cap, "%" PRIu64 " B", b);
        return out;
    }
    double v = (double)b / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) v /= 1024, u++;
    snprintf(out, cap, "%.1f %s", v, units[u]);
    return out;
}

/* "42s", "3m07s", "2h05m": short enough for a status line */
static const char *duration(double s, char *out, size_t cap)
{
    uint64_t t = s > 0 ? (uint64_t)(s + 0.5) : 0;
    if (t < 60) snprintf(out, cap, "%" PRIu64 "s", t);
    else if (t < 3600) snprintf(out, cap, "%" PRIu64 "m%02" PRIu64 "s", t / 60, t % 60);
    else snprintf(out, cap, "%" PRIu64 "h%02" PRIu64 "m", t / 3600, t / 60 % 60);
    return out;
}

void cmd_progress_start(cmd_ui *ui, const char *tool, int quiet)
{
    ui->tool = tool;
    ui->on = !quiet && isatty(STDERR_FILENO);
    ui->t0 = mono();
    ui->last = 0;
    ui->total = ui->bytes_total = 0;
}

double cmd_progress_elapsed(const cmd_ui *ui)
{
    return mono() - ui->t0;
}

/* Appends to line; a line wider than the terminal would wrap, and "\r"
 * then redraws only its last row: cut it to the width. */
static void add(char *line, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *line, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(line);
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, cap - n, fmt, ap);
    va_end(ap);
}

void cmd_progress_show(cmd_ui *ui, const cmd_progress_at *at, int force)
{
    if (!ui->on) return;
    double now = mono(), el = now - ui->t0;
    if (!force && ui->last && now - ui->last < 0.2) return;
    ui->last = now;
    /* totals the library revises down (an estimate) are shown as the
     * largest seen, so that a user never sees the work shrink */
    if (ui->unit != at->unit) ui->unit = at->unit, ui->total = ui->bytes_total = 0;
    if (at->total > ui->total) ui->total = at->total;
    if (at->bytes_total > ui->bytes_total) ui->bytes_total = at->bytes_total;
    uint64_t total = at->total ? ui->total : 0, btotal = at->bytes_total ? ui->bytes_total : 0;
    char line[512] = "", a[32], b[32], d[32];
    add(line, sizeof line, "%s: %" PRIu64, ui->tool, at->done);
    if (total) add(line, sizeof line, "/%" PRIu64, total);
    add(line, sizeof line, " %s", at->unit);
    if (at->samples != UINT64_MAX) add(line, sizeof line, "  %" PRIu64 " samples", at->samples);
    if (at->shards != UINT64_MAX) add(line, sizeof line, "  %" PRIu64 " shards", at->shards);
    if (at->also) add(line, sizeof line, "  %" PRIu64 " %s", at->also_n, at->also);
    add(line, sizeof line, "  %s", cmd_bytes(at->bytes, a, sizeof a));
    if (btotal) add(line, sizeof line, "/%s", cmd_bytes(btotal, b, sizeof b));
    double rate = el > 0.05 ? (double)at->bytes / el : 0;
    add(line, sizeof line, "  %s/s  %s", cmd_bytes((uint64_t)rate, b, sizeof b),
        duration(el, d, sizeof d));
    /* an ETA only from a total that is known: bytes when they are, else
     * the units; none at all before there is a rate to go by */
    double left = -1;
    if (btotal && at->bytes && at->bytes < btotal && el > 1)
        left = el * (double)(btotal - at->bytes) / (double)at->bytes;
    else if (!btotal && total && at->done && at->done < total && el > 1)
        left = el * (double)(total - at->done) / (double)at->done;
    if (left >= 0) add(line, sizeof line, "  ETA %s", duration(left, d, sizeof d));
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && ws.ws_col < sizeof line)
        line[ws.ws_col - 1] = 0;
    fprintf(stderr, "\r\033[K%s", line);
    ui->progress_shown = 1;
}

void cmd_progress_summary(cmd_ui *ui, uint64_t shards, uint64_t n, const char *unit,
                          uint64_t bytes, double seconds)
{
    if (ui->progress_shown) fputs("\r\033[K", stderr);
    ui->progress_shown = 0;
    if (!ui->on) return;
    char a[32], b[32];
    fprintf(stderr, "%s: ", ui->tool);
    if (shards != UINT64_MAX) fprintf(stderr, "%" PRIu64 " shards, ", shards);
    fprintf(stderr, "%" PRIu64 " %s, %s in %.1fs (%s/s)\n", n, unit, cmd_bytes(bytes, a, sizeof a),
            seconds, cmd_bytes(seconds > 0 ? (uint64_t)((double)bytes / seconds) : 0, b, sizeof b));
}
