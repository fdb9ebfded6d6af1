/* vt_writer.c - placeholder, replaced by the writer implementation. */
#include "vt_writer.h"
