/* vt_page_pack.h - the HTML page's data as the page reads it
 * (vt_page_pack.c; docs/REPORT.md "The page's data"). */
#ifndef VT_PAGE_PACK_H
#define VT_PAGE_PACK_H

#include <stddef.h>
#include <stdio.h>

/* Write `window.VT_PACKED = "<base64>";` to out: the JSON text json[0..n)
 * (one object whose members the page sets as globals) with its repeated
 * value strings in a table, gzipped.  The caller keeps json.  Returns 0,
 * VT_ERR_NOMEM or VT_ERR_IO. */
int vt_page_pack(const char *json, size_t n, FILE *out);

#endif
