/* vt_error.h - the one error enum of vramtrace.
 * Functions return 0 (VT_OK) or one of these negative codes. */
#ifndef VT_ERROR_H
#define VT_ERROR_H

typedef enum {
    VT_OK = 0,
    VT_ERR_NOMEM = -1,      /* allocation failed */
    VT_ERR_IO = -2,         /* read/write/open failed; errno-based detail in the owner's message */
    VT_ERR_EXISTS = -3,     /* output file exists (O_EXCL) or is a symlink */
    VT_ERR_INVALID = -4,    /* invalid argument or configuration */
    VT_ERR_TRUNCATED = -5,  /* input ends inside a record or a zstd frame */
    VT_ERR_CORRUPT = -6,    /* input is not a valid trace at some offset */
    VT_ERR_VERSION = -7,    /* unknown magic or format version */
    VT_ERR_DISABLED = -8,   /* tracing disabled (earlier error, fork child, closed) */
    VT_ERR_DROPPED = -9,    /* event dropped because the queue is full (counted) */
    VT_ERR_TOO_LARGE = -10, /* a length in the input exceeds a sane cap */
    VT_ERR_NOT_FOUND = -11, /* unknown id or missing file */
    VT_ERR_NOSPACE = -12,   /* disk full */
    VT_ERR_LIMIT = -13,     /* a memory budget of the reader was reached (final) */
    VT_ERR_AGAIN = -14,     /* a followed trace has no more data yet: call again later */
    VT_ERR_RANGE = -15,     /* a number out of its range, or in a form not accepted (a negative time) */
    VT_ERR__MIN = -15
} vt_err;

/* Static English description of a code; never NULL. */
const char *vt_strerror(int err);

#endif
