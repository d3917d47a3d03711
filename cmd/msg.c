/* msg.c - the messages the tools print on stderr: every one goes through
 * cmd_eprintf, which escapes control characters (sk_escape_text), because
 * names in them (members, keys, paths, arguments) come from outside and an
 * ESC or BEL must not reach the terminal raw. */
#include "cmd.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cmd_eprintf(const char *fmt, ...)
{
    char raw[2 * SK_ERROR_MAX], safe[8 * SK_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    sk_escape_text(safe, sizeof safe, raw);
    fprintf(stderr, "%s\n", safe);
}

int cmd_report(const char *tool, const sk_error *err)
{
    cmd_eprintf("shardkit %s: %s", tool, err->msg[0] ? err->msg : sk_code_name(err->code));
    return err->code == SK_E_USAGE ? SK_EXIT_USAGE : SK_EXIT_PROBLEM;
}

int cmd_usage_error(const char *tool, const char *usage, const char *fmt, ...)
{
    char msg[2 * SK_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cmd_eprintf("shardkit %s: %s", tool, msg);
    fprintf(stderr, "\n%s", usage);
    return SK_EXIT_USAGE;
}

int cmd_unknown_option(const char *tool, char **argv)
{
    /* getopt is told to be quiet (main.c): this is the one message.  For
     * a long option getopt leaves optopt 0 when it does not know it, and
     * the option's value when it lacks its argument. */
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    int eq = (int)strcspn(arg, "=");
    if (!optopt)
        cmd_eprintf("shardkit %s: unknown option '%.*s' (see 'shardkit %s --help')", tool, eq, arg, tool);
    else if (!strncmp(arg, "--", 2))
        cmd_eprintf("shardkit %s: option '%.*s' needs a value (see 'shardkit %s --help')", tool, eq,
                    arg, tool);
    else if (optopt > 0 && optopt < 128)
        cmd_eprintf("shardkit %s: unknown option '-%c', or it needs a value (see 'shardkit %s "
                    "--help')", tool, optopt, tool);
    else
        cmd_eprintf("shardkit %s: option '%s' needs a value (see 'shardkit %s --help')", tool, arg, tool);
    return SK_EXIT_USAGE;
}
