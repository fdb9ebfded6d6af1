# tests/bench/tests.cmake - the benchmark tools: the gate of the benchmark
# builds of the library (bench/vt_gate.c), and bench/gate_pool.py on
# committed gate logs (golden output).
add_executable(test_bench_gate ${CMAKE_CURRENT_LIST_DIR}/test_gate.c ${PROJECT_SOURCE_DIR}/bench/vt_gate.c)
target_include_directories(test_bench_gate PRIVATE ${PROJECT_SOURCE_DIR}/bench)
target_link_libraries(test_bench_gate PRIVATE vt_cmocka Threads::Threads)
add_test(NAME bench.gate COMMAND test_bench_gate)

find_program(VT_BENCH_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(VT_BENCH_PYTHON3)
  add_test(NAME bench.gate_pool
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_gate_pool.sh ${VT_BENCH_PYTHON3} ${PROJECT_SOURCE_DIR})
endif()
