// cxx_frame.cc - a C++ frame for the symbolization test: a method of a
// class template in a namespace, whose demangled name the test checks.
#include <cstdint>

namespace vtt {
template <typename T> struct Grabber {
    __attribute__((noinline)) static void *grab(T x);
};
template <typename T> void *Grabber<T>::grab(T x)
{
    void *pc;
    asm volatile("lea (%%rip), %0" : "=r"(pc));  // an address inside grab itself
    return (char *)pc + (x & 0);
}
template struct Grabber<int>;
} // namespace vtt

extern "C" void *vt_test_cxx_pc(void)
{
    return vtt::Grabber<int>::grab(1);
}
