/*
 * places.c - what the tools share about the places they name: the checks
 * every place-naming option goes through (the library's one URL grammar,
 * sk_place_check) and what a tool that writes a dataset does with the
 * manifest already there (--append, --overwrite).
 */
#include "cmd.h"

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
