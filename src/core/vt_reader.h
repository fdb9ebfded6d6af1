/* vt_reader.h - streaming trace reader (src/core).
 *
 * Iterates over the events of a trace file in bounded memory: the
 * decompression window, one record (capped at VT_READER_MAX_RECORD) and the
 * interning tables (strings, frames, stacks, threads, modules, launches),
 * which grow with the number of unique definitions, never with the event
 * count.  Never trusts lengths: every allocation is capped.
 *
 * Errors carry the file name and the compressed offset.  After
 * VT_ERR_CORRUPT the caller may call vt_reader_next() again: the reader
 * resumes at the next zstd frame that decodes (events in between are lost
 * and counted in vt_reader_stats.skipped_bytes).  VT_ERR_TRUNCATED is final.
 * Not thread-safe; one reader per thread.
 */
#ifndef VT_READER_H
#define VT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "vt_event.h"

#define VT_READER_MAX_RECORD (16u << 20)

typedef struct vt_reader vt_reader;

/* Open a trace file.  Returns 0 or a vt_err; on error *out is NULL and, if
 * errmsg is not NULL, a message is written there (errmsg_len bytes max). */
int vt_reader_open(vt_reader **out, const char *path, char *errmsg, size_t errmsg_len);

/* Read from memory (not copied: must outlive the reader).  `name` is used in
 * messages. */
int vt_reader_open_mem(vt_reader **out, const void *data, size_t size, const char *name);

/* Next event.  Returns 1 with *ev filled, 0 at the end of a complete stream,
 * or a negative vt_err (see vt_reader_errmsg()).  Pointers inside *ev stay
 * valid until the next call.  Every record is returned, definitions
 * (STRING, FRAME, STACK, THREAD, MODULE, LAUNCH, DEVICE) included, after the
 * reader has stored them. */
int vt_reader_next(vt_reader *r, vt_event *ev);

/* "FILE: truncated at offset N: ..." for the last error; "" if none. */
const char *vt_reader_errmsg(const vt_reader *r);

/* Compressed offset of the start of the zstd frame being read. */
uint64_t vt_reader_offset(const vt_reader *r);

/* Lookups in the tables built so far; NULL / 0 when unknown. */
const char *vt_reader_string(const vt_reader *r, uint32_t id);
const vt_ev_frame *vt_reader_frame(const vt_reader *r, uint32_t id);
const vt_ev_thread *vt_reader_thread(const vt_reader *r, uint32_t id);
const vt_ev_module *vt_reader_module(const vt_reader *r, uint32_t id);
const vt_ev_header *vt_reader_header(const vt_reader *r); /* NULL before the header */
/* Flatten stack `id` (following parents) into frame ids, innermost first.
 * Returns the full depth (may exceed max; only max are stored), 0 if unknown. */
uint32_t vt_reader_stack(const vt_reader *r, uint32_t id, uint32_t *frames, uint32_t max);

typedef struct {
    uint64_t records;       /* records decoded */
    uint64_t bytes_in;      /* compressed bytes consumed */
    uint64_t bytes_raw;     /* decompressed bytes */
    uint64_t frames;        /* zstd frames */
    uint64_t skipped_bytes; /* compressed bytes skipped after corruption */
    uint64_t unknown_fields;/* fields of a newer format version, ignored */
    int complete;           /* an End record was seen */
} vt_reader_stats;
void vt_reader_get_stats(const vt_reader *r, vt_reader_stats *st);

/* vt_reader_free(NULL) does nothing. */
void vt_reader_free(vt_reader *r);

#endif
