/* vt_gate.h - benchmark-only switch that turns tracing off and on inside one
 * running process, so a benchmark can time traced and untraced steps of the
 * same process in alternating blocks (bench/gpu_gate.py): the spread between
 * processes on a shared machine (20-50 %) then cancels out.
 *
 * The switch is a file of VT_GATE_SIZE bytes, mapped shared by both sides:
 *   bytes 0-3  request: (seq << 1) | on, written by the benchmark
 *   bytes 4-7  applied: the last request applied, written by the gate thread
 * The benchmark writes a request and waits until `applied` equals it; the
 * gate thread polls every 200 us, calls the apply function when the request
 * changes, then publishes it.  Native-endian 32-bit words. */
#ifndef VT_GATE_H
#define VT_GATE_H

#define VT_GATE_SIZE 64

/* Called on the gate thread with on = 0 or 1, each time the request's on
 * bit differs from the state last applied (the initial state is on). */
typedef void (*vt_gate_apply_fn)(int on, void *arg);

/* Map PATH (an existing file of at least VT_GATE_SIZE bytes) and start the
 * gate thread.  Returns 0, or a negative errno-style code with nothing
 * started; one gate per process. */
int vt_gate_start(const char *path, vt_gate_apply_fn fn, void *arg);

/* Stop the gate thread and unmap; safe to call when none was started.  Not
 * async-signal-safe; not for a forked child (whose gate thread does not
 * exist: it only forgets the gate). */
void vt_gate_stop(void);

/* In a forked child: forget the parent's gate (its thread does not exist
 * here) without joining or unmapping anything. */
void vt_gate_forget(void);

/* Requests applied so far (toggles in either direction). */
unsigned vt_gate_toggles(void);

#endif
