/* got_callee.c - the function test_got.c's caller libraries call. */
int vt_got_target(int x);
int vt_got_target(int x)
{
    return x + 1;
}
