/* dlmod.c - a tiny shared object loaded by test_unwind.c after the first
 * module scan, to check that the unwinder finds libraries loaded later. */
__attribute__((visibility("default"))) void *vt_test_dlmod_fn(void) { return (void *)&vt_test_dlmod_fn; }
