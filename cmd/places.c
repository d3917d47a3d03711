/*
 * places.c - what the tools share about the places they name: the checks
 * every place-naming option goes through (the library's one URL grammar,
 * sk_place_check) and what a tool that writes a dataset does with the
 * manifest already there (--append, --overwrite).
 */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

int cmd_existing_option(const char *tool, const char *usage, int c, int *existing)
{
    int want = c == CMD_OPT_APPEND ? SK_EXISTING_APPEND : c == CMD_OPT_OVERWRITE ? SK_EXISTING_OVERWRITE : -1;
    if (want < 0) return 0;
    if (*existing && *existing != want)
        return cmd_usage_error(tool, usage, "--append and --overwrite: choose one"), -1;
    *existing = want;
    return 1;
}

int cmd_places(const char *tool, const cmd_place *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sk_error err = SK_ERROR_INIT;
        char what[128];
        if (!p[i].place) continue;
        snprintf(what, sizeof what, "%s%s%s", tool, p[i].opt ? " " : "", p[i].opt ? p[i].opt : "");
        if (sk_place_check(p[i].place, p[i].flags, what, NULL, &err)) {
            fprintf(stderr, "shardkit %s: %s\n", tool, err.msg);
            return SK_EXIT_USAGE;
        }
    }
    return 0;
}

int cmd_places_args(const char *tool, char *const *args, int n, unsigned flags)
{
    for (int i = 0; i < n; i++)
        if (cmd_places(tool, &(cmd_place){NULL, args[i], flags}, 1)) return SK_EXIT_USAGE;
    return 0;
}
