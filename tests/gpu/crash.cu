// crash.cu - dying under tracing. "segv": a NULL write after some
// allocations: the emergency flush writes End(signal=11), then the default
// action kills the process.  "kill": SIGKILL to itself after the periodic
// flush had time to run: the trace has every event up to the last flush
// and no End record.
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "vt_gputest.h"

extern "C" NOINLINE void *before_crash_site(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n));
    return p;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    for (int i = 0; i < 10; i++) {
        void *p = before_crash_site((size_t)(i + 1) * 100000);
        EXPECT("alloc malloc %p %d before_crash_site", p, (i + 1) * 100000);
    }
    if (!strcmp(mode, "kill")) {
        EXPECT("complete 0");
        usleep(400 * 1000); // > VRAMTRACE_FLUSH_MS
        kill(getpid(), SIGKILL);
    } else {
        EXPECT("complete 1");
        EXPECT("end_signal 11");
        volatile int *np = NULL;
        *np = 1;
    }
    return 0;
}
