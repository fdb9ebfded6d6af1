/* vt_testenc.h - test helper: build trace byte streams by hand with
 * protobuf-c pack + zstd, independently of src/core/vt_writer.c, so the
 * reader can be tested against exactly the bytes a test wants (hostile
 * ones included).  Test code only. */
#ifndef VT_TESTENC_H
#define VT_TESTENC_H

#include <stddef.h>
#include <stdint.h>

#include "proto/vramtrace.pb-c.h"

typedef struct vt_tenc vt_tenc;

vt_tenc *vt_tenc_new(int checksum);
void vt_tenc_free(vt_tenc *e);
/* Append one Record entry (0x0A, len, bytes) to the current zstd frame. */
void vt_tenc_rec(vt_tenc *e, const Vramtrace__Record *rec);
/* Same, from a body message of case `c` (any Vramtrace__* pointer). */
void vt_tenc_add(vt_tenc *e, int64_t ts_delta, Vramtrace__Record__BodyCase c, const void *msg);
/* Append bytes as they are to the decompressed stream. */
void vt_tenc_stream_bytes(vt_tenc *e, const void *p, size_t n);
/* zstd flush point (everything so far decodable); end the current frame. */
void vt_tenc_flush(vt_tenc *e);
void vt_tenc_end_frame(vt_tenc *e);
/* Append bytes as they are to the compressed file (after ending the frame). */
void vt_tenc_file_bytes(vt_tenc *e, const void *p, size_t n);
/* The file so far (ends the open frame only if end_frame). */
const uint8_t *vt_tenc_data(vt_tenc *e, size_t *size);
size_t vt_tenc_size(const vt_tenc *e);

/* Standard records. */
void vt_tenc_header(vt_tenc *e, uint32_t magic, uint32_t version);
void vt_tenc_sync(vt_tenc *e, uint64_t seq, uint64_t t, uint64_t dt);
void vt_tenc_string(vt_tenc *e, uint32_t id, const char *s);
void vt_tenc_end(vt_tenc *e, uint64_t events);

/* A small deterministic trace with every record kind, over `nframes` zstd
 * frames (>= 1), with flush points between groups of records.  Used by the
 * tests and by gen_fixture (tests/data/small.vt.zst). */
void vt_tenc_sample(vt_tenc *e, int nframes);

/* Fill `rec` with a random record of body case `c` (random field values,
 * ids within [1, maxid]); memory from a bump arena freed by
 * vt_tenc_random_reset().  Deterministic for a given rng state. */
void vt_tenc_random_record(uint64_t *rng, Vramtrace__Record__BodyCase c, uint32_t maxid, Vramtrace__Record *rec);
void vt_tenc_random_reset(void);
uint64_t vt_tenc_rand(uint64_t *rng);

#endif
