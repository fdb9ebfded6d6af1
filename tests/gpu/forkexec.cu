// forkexec.cu - fork and exec under tracing.  The parent allocates, forks a
// child that only exits (it must not write into the parent's trace), then
// fork+execs itself with "child": the exec'd process writes its own trace
// (a new %p).  Expectations for the parent go to stdout; the exec'd child
// prints its own, prefixed "CHILD ".
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "vt_gputest.h"

extern "C" NOINLINE void *parent_alloc_site(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n));
    return p;
}

extern "C" NOINLINE void *exec_child_alloc_site(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n));
    return p;
}

int main(int argc, char **argv)
{
    printf("%sPID %d\n", argc > 1 ? "CHILD " : "", (int)getpid());
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "child")) {
        void *p = exec_child_alloc_site(7654321);
        printf("CHILD VT_EXPECT alloc malloc %p %d exec_child_alloc_site\n", p, 7654321);
        printf("CHILD VT_EXPECT complete 1\n");
        CK(cudaFree(p));
        return 0;
    }
    void *a = parent_alloc_site(1111111);
    EXPECT("alloc malloc %p %d parent_alloc_site", a, 1111111);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        // no CUDA here; exit() runs atexit handlers: they must not touch the parent's file
        exit(0);
    }
    waitpid(c, NULL, 0);
    pid_t e = fork();
    if (e == 0) {
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(e, &st, 0);
    printf("exec child status %d\n", WEXITSTATUS(st));
    void *b = parent_alloc_site(2222222);
    EXPECT("alloc malloc %p %d parent_alloc_site", b, 2222222);
    CK(cudaFree(a));
    CK(cudaFree(b));
    EXPECT("free %p", a);
    EXPECT("free %p", b);
    EXPECT("complete 1");
    return 0;
}
