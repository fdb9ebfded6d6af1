/* vt_error.c - error strings. */
#include "vt_error.h"

const char *vt_strerror(int err)
{
    switch (err) {
    case VT_OK: return "success";
    case VT_ERR_NOMEM: return "out of memory";
    case VT_ERR_IO: return "input/output error";
    case VT_ERR_EXISTS: return "file exists or is a symbolic link";
    case VT_ERR_INVALID: return "invalid argument";
    case VT_ERR_TRUNCATED: return "truncated";
    case VT_ERR_CORRUPT: return "corrupt data";
    case VT_ERR_VERSION: return "not a vramtrace trace or unsupported format version";
    case VT_ERR_DISABLED: return "tracing disabled";
    case VT_ERR_DROPPED: return "event dropped: queue full";
    case VT_ERR_TOO_LARGE: return "length exceeds limit";
    case VT_ERR_NOT_FOUND: return "not found";
    case VT_ERR_NOSPACE: return "no space left on device";
    case VT_ERR_LIMIT: return "memory budget of the definition tables reached";
    case VT_ERR_AGAIN: return "no more data yet (the trace is still being written)";
    case VT_ERR_RANGE: return "a number out of range";
    default: return "unknown error";
    }
}
