# bench/writer.cmake: producer cost, writer throughput and bytes per event of
# the trace writer.  Run: build/bench/bench_writer (see BENCHMARKS.md ## writer).
add_executable(bench_writer ${CMAKE_CURRENT_LIST_DIR}/bench_writer.c)
target_link_libraries(bench_writer PRIVATE vt_core Threads::Threads)
add_executable(bench_clock ${CMAKE_CURRENT_LIST_DIR}/bench_clock.c)
target_link_libraries(bench_clock PRIVATE vt_core Threads::Threads)
