/* builtin-dump.c - `vramtrace dump FILE`: placeholder until the reader lands. */
#include <stdio.h>
#include "builtin.h"

int cmd_dump(int argc, char **argv)
{
    fprintf(stderr, "vramtrace dump: not implemented yet\n");
    return 1;
}
