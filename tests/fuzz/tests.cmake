# tests/fuzz: fuzz targets of the reader entry points.  The corpus is
# replayed by a plain driver in every build (sanitizer builds included);
# the libFuzzer binary is built only with clang and -DVT_FUZZ=ON:
#   CC=clang cmake -S . -B build-fuzz -DVT_FUZZ=ON -DVT_BUILD_INJECT=OFF
#   cmake --build build-fuzz --target fuzz_reader
#   build-fuzz/tests/fuzz_reader -max_len=65536 tests/fuzz/corpus
option(VT_FUZZ "Build libFuzzer targets (clang only)" OFF)

add_executable(fuzz_reader_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_reader.c ${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_reader_replay PRIVATE vt_core)
add_test(NAME fuzz.reader.replay
  COMMAND fuzz_reader_replay ${CMAKE_CURRENT_LIST_DIR}/corpus ${VT_TEST_DATA})
set_tests_properties(fuzz.reader.replay PROPERTIES LABELS "fuzz;reader")

if(VT_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VT_FUZZ needs clang (CC=clang)")
  endif()
  target_compile_options(vt_core PRIVATE -fsanitize=fuzzer-no-link)  # coverage of the reader
  add_executable(fuzz_reader ${CMAKE_CURRENT_LIST_DIR}/fuzz_reader.c)
  target_compile_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_reader PRIVATE vt_core)
endif()

# Crafted inputs too big to commit, generated: a string-table memory bomb and
# a 1 M-deep stack chain; every command stays in bounded memory and time.
add_executable(gen_crafted ${CMAKE_CURRENT_LIST_DIR}/gen_crafted.c)
target_link_libraries(gen_crafted PRIVATE vt_reader_testlib)
add_test(NAME fuzz.crafted
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/crafted.sh $<TARGET_FILE:gen_crafted> $<TARGET_FILE:vramtrace>)
# notsan: TSan's shadow memory doubles the resident set the test caps
set_tests_properties(fuzz.crafted PROPERTIES LABELS "fuzz;notsan" TIMEOUT 300)
