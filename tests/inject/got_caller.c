/* got_caller.c - calls vt_got_target through its PLT (GOT_CALLER_ADDR:
 * also takes its address, a GLOB_DAT relocation); built twice by
 * tests.cmake: with -z relro -z now (the GOT read-only after loading) and
 * with lazy binding. */
int vt_got_target(int x);
#ifndef GOT_CALLER_NAME
#define GOT_CALLER_NAME vt_got_call
#endif
int GOT_CALLER_NAME(int x);
int GOT_CALLER_NAME(int x)
{
#ifdef GOT_CALLER_ADDR
    int (*volatile f)(int) = vt_got_target;
    return f(x);
#else
    return vt_got_target(x);
#endif
}
