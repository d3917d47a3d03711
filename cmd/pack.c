/* pack.c - placeholder replaced below */
#include "cmd.h"
int cmd_pack(int argc, char **argv) { (void)argc; (void)argv; return 2; }
