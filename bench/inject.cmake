# bench/inject.cmake - benchmarks of the injection library's CPU parts.
add_executable(bench_unwind ${CMAKE_CURRENT_LIST_DIR}/bench_unwind.c)
target_link_libraries(bench_unwind PRIVATE vt_inject_common Threads::Threads)
target_compile_options(bench_unwind PRIVATE -O2 -fomit-frame-pointer -fno-optimize-sibling-calls)
