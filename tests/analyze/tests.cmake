# tests/analyze: the analyzer (src/analyze) and `vramtrace report` / `diff`.
# gen_traces writes the synthetic traces (core writer) into the build dir;
# golden.sh compares reports with tests/analyze/golden/ (refresh with
# scripts/update-golden.sh).
add_executable(vt_gen_traces ${CMAKE_CURRENT_LIST_DIR}/gen_traces.c)
target_include_directories(vt_gen_traces PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_gen_traces PRIVATE vt_core)

set(VT_ANALYZE_TRACES ${CMAKE_BINARY_DIR}/tests/analyze/traces)
add_test(NAME analyze.gen COMMAND vt_gen_traces ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.gen PROPERTIES FIXTURES_SETUP analyze_traces LABELS "analyze")
