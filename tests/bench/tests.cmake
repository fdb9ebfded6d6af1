# tests/bench/tests.cmake - the benchmark tools whose output BENCHMARKS.md
# quotes: bench/gate_pool.py on committed gate logs (golden output).
find_program(VT_BENCH_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(VT_BENCH_PYTHON3)
  add_test(NAME bench_gate_pool
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_gate_pool.sh ${VT_BENCH_PYTHON3} ${PROJECT_SOURCE_DIR})
endif()
