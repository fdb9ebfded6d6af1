/* vt_pyoffsets_check.c - compiled once per Python version against that
 * version's own headers (internal ones included): checks that the layout
 * table built into vt_pystack.c matches the real structures.  Test-only. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_runtime.h"
#endif

#include "vt_pystack.h"

static int failures;

static void expect(const char *field, long real)
{
    long ours = vt_pystack_layout_offset(PY_MINOR_VERSION, field);
    if (ours != real) {
        printf("MISMATCH 3.%d %s: table %ld, headers %ld\n", PY_MINOR_VERSION, field, ours, real);
        failures++;
    }
}

static unsigned state_bits(int which)
{
    PyASCIIObject a;
    unsigned s = 0;
    memset(&a, 0, sizeof a);
    if (which == 0) a.state.kind = 7;
    if (which == 1) a.state.compact = 1;
    if (which == 2) a.state.ascii = 1;
    memcpy(&s, &a.state, sizeof s);
    return s;
}

int main(void)
{
    expect("ts_interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX >= 0x030D0000
    expect("ts_frame", offsetof(PyThreadState, current_frame));
    expect("ts_cframe", -1);
#elif PY_VERSION_HEX >= 0x030B0000
    expect("ts_frame", -1);
    expect("ts_cframe", offsetof(PyThreadState, cframe));
    expect("cf_current", offsetof(_PyCFrame, current_frame));
#else
    expect("ts_frame", offsetof(PyThreadState, frame));
    expect("ts_cframe", -1);
#endif
#if PY_VERSION_HEX >= 0x030B0000
    expect("f_previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030D0000
    expect("f_code", offsetof(_PyInterpreterFrame, f_executable));
    expect("f_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
    expect("f_code", offsetof(_PyInterpreterFrame, f_code));
    expect("f_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
    expect("f_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
    expect("f_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#else
    expect("f_is_entry", -1);
    if (FRAME_OWNED_BY_CSTACK != 3) { printf("MISMATCH FRAME_OWNED_BY_CSTACK\n"); failures++; }
#endif
    if (FRAME_OWNED_BY_GENERATOR != 1) { printf("MISMATCH FRAME_OWNED_BY_GENERATOR\n"); failures++; }
    expect("co_qualname", offsetof(PyCodeObject, co_qualname));
    expect("co_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
    expect("co_adaptive", offsetof(PyCodeObject, co_code_adaptive));
    expect("ob_size", offsetof(PyVarObject, ob_size));
    if (sizeof(_Py_CODEUNIT) != 2) { printf("MISMATCH _Py_CODEUNIT\n"); failures++; }
#else
    expect("f_previous", offsetof(PyFrameObject, f_back));
    expect("f_code", offsetof(PyFrameObject, f_code));
    expect("f_instr", offsetof(PyFrameObject, f_lasti));
    expect("f_owner", -1);
    expect("co_qualname", -1);
#endif
    expect("co_filename", offsetof(PyCodeObject, co_filename));
    expect("co_name", offsetof(PyCodeObject, co_name));
    expect("co_linetable", offsetof(PyCodeObject, co_linetable));
    expect("co_firstlineno", offsetof(PyCodeObject, co_firstlineno));
    expect("ob_type", offsetof(PyObject, ob_type));
    expect("ob_size", offsetof(PyBytesObject, ob_base.ob_size));
    expect("bytes_sval", offsetof(PyBytesObject, ob_sval));
    expect("u_length", offsetof(PyASCIIObject, length));
    expect("u_state", offsetof(PyASCIIObject, state));
    if (offsetof(PyASCIIObject, hash) != offsetof(PyASCIIObject, length) + 8) { /* code_key reads it there */
        printf("MISMATCH 3.%d PyASCIIObject.hash not after .length\n", PY_MINOR_VERSION);
        failures++;
    }
    expect("u_ascii_size", sizeof(PyASCIIObject));
    expect("u_compact_size", sizeof(PyCompactUnicodeObject));
    if (state_bits(0) != 0x1C || state_bits(1) != 0x20 || state_bits(2) != 0x40) {
        printf("MISMATCH unicode state bits\n");
        failures++;
    }
#if PY_VERSION_HEX >= 0x030D0000
    expect("dbg_version", offsetof(_Py_DebugOffsets, version));
    expect("dbg_free_threaded", offsetof(_Py_DebugOffsets, free_threaded));
    expect("dbg_ts_interp", offsetof(_Py_DebugOffsets, thread_state.interp));
    expect("dbg_ts_current_frame", offsetof(_Py_DebugOffsets, thread_state.current_frame));
    expect("dbg_if_previous", offsetof(_Py_DebugOffsets, interpreter_frame.previous));
    expect("dbg_if_executable", offsetof(_Py_DebugOffsets, interpreter_frame.executable));
    expect("dbg_if_instr_ptr", offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
    expect("dbg_if_owner", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
    expect("dbg_co_filename", offsetof(_Py_DebugOffsets, code_object.filename));
    expect("dbg_co_name", offsetof(_Py_DebugOffsets, code_object.name));
    expect("dbg_co_qualname", offsetof(_Py_DebugOffsets, code_object.qualname));
    expect("dbg_co_linetable", offsetof(_Py_DebugOffsets, code_object.linetable));
    expect("dbg_co_firstlineno", offsetof(_Py_DebugOffsets, code_object.firstlineno));
    expect("dbg_co_adaptive", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
    expect("dbg_ob_type", offsetof(_Py_DebugOffsets, pyobject.ob_type));
    expect("dbg_bytes_ob_size", offsetof(_Py_DebugOffsets, bytes_object.ob_size));
    expect("dbg_bytes_sval", offsetof(_Py_DebugOffsets, bytes_object.ob_sval));
    expect("dbg_u_state", offsetof(_Py_DebugOffsets, unicode_object.state));
    expect("dbg_u_length", offsetof(_Py_DebugOffsets, unicode_object.length));
    expect("dbg_u_ascii_size", offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
    if (sizeof(_Py_DebugOffsets) < 568) { printf("MISMATCH _Py_DebugOffsets size\n"); failures++; }
#endif
    printf("%s: Python 3.%d layout table vs headers\n", failures ? "FAIL" : "OK", PY_MINOR_VERSION);
    return failures ? 1 : 0;
}
