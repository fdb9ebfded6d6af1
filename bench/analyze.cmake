# bench/analyze: replay throughput of the analyzer on a generated trace
# (see bench/analyze_bench.c; results in BENCHMARKS.md, "## analyze").
add_executable(analyze_bench ${CMAKE_CURRENT_LIST_DIR}/analyze_bench.c)
target_include_directories(analyze_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/analyze)
target_link_libraries(analyze_bench PRIVATE vt_analyze vt_core)
