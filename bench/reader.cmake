# bench/reader: reader throughput (bench/bench_reader.c); results in
# BENCHMARKS.md "## reader".  Run: build/bench/bench_reader [--events N]
add_executable(bench_reader ${CMAKE_CURRENT_LIST_DIR}/bench_reader.c)
target_link_libraries(bench_reader PRIVATE vt_core vt_zstd)
