/* reader_check.h - test helper: a reference model of the stream rules
 * (delta times, correlation ids, interning with the first definition
 * winning) over records unpacked by protobuf-c, and a field-by-field
 * comparison of a vt_event returned by the reader against it.  Test code. */
#ifndef VT_READER_CHECK_H
#define VT_READER_CHECK_H

#include <stdint.h>

#include "proto/vramtrace.pb-c.h"
#include "vt_reader.h"

#define CHECK_MAXID 4096

typedef struct {
    uint64_t host, dev, corr;
    const Vramtrace__String *strings[CHECK_MAXID + 1];
    const Vramtrace__Launch *launches[CHECK_MAXID + 1];
    const Vramtrace__Thread *threads[CHECK_MAXID + 1];
    const Vramtrace__Stack *stacks[CHECK_MAXID + 1];
} check_model;

/* Apply `rec` to the model and compare `ev` with it.  Returns 0 when equal,
 * else -1 with a message in `why`. */
int check_event(check_model *m, const Vramtrace__Record *rec, const vt_event *ev, char *why, size_t why_len);

#endif
