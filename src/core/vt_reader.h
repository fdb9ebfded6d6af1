/* vt_reader.h - streaming trace reader (src/core).
 *
 * Iterates over the events of a trace file in bounded memory: the input
 * chunk (1 MiB), an 8 MiB buffer into which a whole zstd frame is
 * decompressed when it fits (the writer's frames do), else the streaming
 * decompression window (frames asking for more than
 * 2^VT_READER_WINDOW_LOG_MAX bytes are refused as corrupt), one record
 * (capped at VT_READER_MAX_RECORD), the columns of one KernelBatch (at most
 * 65536 kernels, 2.5 MiB; vt_reader_columns.h) and the interning tables (strings,
 * frames, stacks, threads, modules, launches, devices), which grow with the
 * number of unique definitions, never with the event count, and are capped
 * too: an id may not exceed twice the number of ids of its kind defined so
 * far plus VT_READER_ID_SLACK (ids come in order of first use), and all
 * tables together hold at most VT_READER_TABLE_FLOOR + RATIO x the
 * compressed bytes read (at most VT_READER_MAX_TABLE_BYTES; a shared
 * vt_table_budget bounds the files of one command).  Never trusts
 * lengths: every allocation is capped.  Records are decoded by a
 * hand-written protobuf decoder (no allocation per record); fields unknown
 * to this version are skipped and counted, and so are records with an
 * unknown body.
 *
 * Errors carry the file name and compressed offsets:
 *   "FILE: truncated at offset N (inside a zstd frame starting at offset M)"
 *   "FILE: corrupt record at offset N (frame starting at offset M,
 *          decompressed byte D): why"   N: input consumed when it was met
 *   "FILE: corrupt zstd frame at offset N (frame starting at offset M): why"
 *                                        N: the byte where zstd failed
 *   "FILE: not a vramtrace trace ..." / "unsupported format version V ..."
 * A truncated file yields every complete record, then VT_ERR_TRUNCATED.
 * Damage yields every record decoded before it (all zstd blocks before the
 * damaged one), then VT_ERR_CORRUPT (or VT_ERR_TOO_LARGE, a record over the
 * cap); the caller may call vt_reader_next() again: the reader resumes at
 * the next zstd frame that decodes and starts with a Sync (the rest of the
 * damaged frame is lost; see vt_reader_stats).  VT_ERR_TRUNCATED,
 * VT_ERR_VERSION (not a trace, bad magic, unknown format version, first
 * record not a header), VT_ERR_IO and VT_ERR_NOMEM are final: every later
 * call returns the same code.  A stream that ends cleanly between frames but
 * without an End record is truncated too (the process died).
 * Not thread-safe; one reader per thread.
 */
#ifndef VT_READER_H
#define VT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "vt_event.h"

#define VT_READER_MAX_RECORD (16u << 20)
#define VT_READER_WINDOW_LOG_MAX 27
#define VT_READER_ID_SLACK (1u << 20)
#define VT_READER_MAX_TABLE_BYTES (1024ull << 20)
/* The definition tables of a file may hold at most FLOOR + RATIO x the
 * compressed bytes read so far (and never more than MAX_TABLE_BYTES): a
 * real trace's tables are a few times its compressed definitions (names and
 * paths compress ~5-10x), while a crafted file of one repeated string
 * compresses 1000x and would otherwise cost gigabytes. */
#define VT_READER_TABLE_FLOOR (64ull << 20)
#define VT_READER_TABLE_RATIO 32u

/* All the files of one command together: what their definition tables
 * took in all (not given back when a file ends: the analysis keeps names). */
#define VT_READER_COMMAND_TABLE_BYTES (1024ull << 20)

/* A budget shared by the readers of one command (all files of a directory,
 * both sides of a diff): their tables together stay under `limit`. */
typedef struct {
    uint64_t limit, used;
} vt_table_budget;

typedef struct vt_reader vt_reader;

/* Open a trace file.  Returns 0 or a vt_err (VT_ERR_NOT_FOUND when the file
 * does not exist, VT_ERR_IO, VT_ERR_NOMEM); on error *out is NULL and, if
 * errmsg is not NULL, a message ("FILE: why") is written there (errmsg_len
 * bytes max).  Nothing is read before the first vt_reader_next(). */
int vt_reader_open(vt_reader **out, const char *path, char *errmsg, size_t errmsg_len);

/* Read from memory (not copied: must outlive the reader).  `name` is used in
 * messages (NULL: "<memory>").  Returns 0 or VT_ERR_NOMEM. */
int vt_reader_open_mem(vt_reader **out, const void *data, size_t size, const char *name);

/* Next event.  Returns 1 with *ev filled, 0 at the end of a complete stream
 * (an End record was seen and the input ended between frames), or a
 * negative vt_err (see vt_reader_errmsg()).  Every record is returned,
 * definitions (HEADER, SYNC, STRING, FRAME, STACK, THREAD, MODULE, LAUNCH,
 * DEVICE) included, after the reader has stored them.  ev->time_ns follows
 * the delta rules of docs/FORMAT.md (definitions get the current host time).
 * Kernels come resolved through their Launch (name NULL and name_id 0 if
 * the launch is unknown); a KernelBatch record comes out as its kernels,
 * one VT_EV_KERNEL per call (decoded and checked whole first: a corrupt
 * batch yields none); vt_site.tid is resolved from the thread table.
 * Pointers inside *ev stay valid until the next call, except those into the
 * tables (strings, names, paths), valid until vt_reader_free(). */
int vt_reader_next(vt_reader *r, vt_event *ev);

/* Up to `max` (>= 1) events into ev[0 .. n): the same events, in the same
 * order, as n calls of vt_reader_next(), for less per-event overhead.
 * Returns n >= 1, or what vt_reader_next() returns (0 at the end of a
 * complete stream, a negative vt_err; VT_ERR_INVALID for max < 1) when no
 * event comes.  A batch holds only records of the reader's hot path
 * (kernels, allocations, frees); any other record (definitions, the first
 * kernel of a KernelBatch, damage...) ends it and comes first and alone in
 * the next one: so pointers inside ev[] follow the rules of
 * vt_reader_next() (valid until the next call), and an error is never
 * preceded by events in the same call. */
int vt_reader_next_batch(vt_reader *r, vt_event *ev, int max);

/* Follow a trace that is still being written (vramtrace top): where the
 * file ends before the End record (inside a zstd frame, or between frames)
 * vt_reader_next() returns VT_ERR_AGAIN instead of the final
 * VT_ERR_TRUNCATED, having handed out every complete record; a later call
 * reads what was appended since, from where it stopped (zstd's state, the
 * frame's decoded bytes and the definition tables stay: nothing is read
 * twice).  The records of the unfinished last frame go out before its
 * checksum (counted in frames_unverified).  Damage still resynchronizes
 * as usual.  Files only (a memory input has no "later"); off by default. */
void vt_reader_set_follow(vt_reader *r, int on);

/* "FILE: truncated at offset N ..." for the last error; "" if none. */
const char *vt_reader_errmsg(const vt_reader *r);

/* Compressed offset of the start of the zstd frame being read. */
uint64_t vt_reader_offset(const vt_reader *r);

/* Lookups in the tables built so far; NULL when unknown (or id 0).
 * Returned pointers stay valid until vt_reader_free(). */
const char *vt_reader_string(const vt_reader *r, uint32_t id);
const vt_ev_frame *vt_reader_frame(const vt_reader *r, uint32_t id);
const vt_ev_thread *vt_reader_thread(const vt_reader *r, uint32_t id);
const vt_ev_module *vt_reader_module(const vt_reader *r, uint32_t id);
const vt_ev_launch *vt_reader_launch(const vt_reader *r, uint32_t id);
const vt_ev_device *vt_reader_device(const vt_reader *r, uint32_t index);
const vt_ev_header *vt_reader_header(const vt_reader *r); /* NULL before the header */
/* Flatten stack `id` (following parents) into frame ids, innermost first.
 * Returns the full depth (may exceed max; only max are stored), 0 if unknown.
 * A parent that is unknown (lost in a damaged frame) ends the stack. */
uint32_t vt_reader_stack(const vt_reader *r, uint32_t id, uint32_t *frames, uint32_t max);

typedef struct {
    uint64_t records;       /* records decoded */
    uint64_t bytes_in;      /* compressed bytes consumed */
    uint64_t bytes_raw;     /* decompressed bytes */
    uint64_t frames;        /* zstd frames started */
    uint64_t skipped_bytes; /* compressed bytes passed over after corruption
                             * (discarded rest of a damaged frame, or scanned
                             * while looking for the next zstd magic) */
    uint64_t unknown_fields;/* fields of a newer format version, ignored */
    uint64_t unknown_records;/* records whose body this reader does not know, skipped */
    uint64_t resyncs;       /* recoveries after VT_ERR_CORRUPT */
    uint64_t sync_gaps;     /* Sync.sequence jumps: zstd frames lost */
    uint64_t frames_failed; /* zstd frames whose checksum (or decoding) failed: skipped whole */
    uint64_t frames_unverified; /* frames handed out before their checksum: the last one of a
                             * trace cut short, or frames too large to hold whole (or a pipe) */
    uint64_t table_bytes;   /* held by the definition tables */
    int complete;           /* an End record was seen */
} vt_reader_stats;
void vt_reader_get_stats(const vt_reader *r, vt_reader_stats *st);

/* 1 when the events the last vt_reader_next() or vt_reader_next_batch()
 * returned come from a frame handed out before its checksum could be
 * checked (frames_unverified: the last frame of a trace cut short, a
 * frame too large to hold whole, any frame read from a pipe): a flipped
 * bit there reaches the caller as a value.  0 otherwise. */
int vt_reader_unverified(const vt_reader *r);

/* Charge this reader's tables to `b` too (not owned; must outlive it).
 * Call before the first vt_reader_next(). */
void vt_reader_share_budget(vt_reader *r, vt_table_budget *b);

/* vt_reader_free(NULL) does nothing. */
void vt_reader_free(vt_reader *r);

#endif
