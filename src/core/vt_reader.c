/* vt_reader.c - placeholder, replaced by the reader implementation. */
#include "vt_reader.h"
