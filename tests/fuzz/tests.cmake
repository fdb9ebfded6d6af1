# tests/fuzz: fuzz targets of the reader entry points (fuzz_reader), of
# everything fed from decoded events: the analyzer's replay and the reports
# (fuzz_analyze), every exporter (fuzz_export), and of the files read beside a trace:
# TRACE.sym and holders.PID.txt (fuzz_sidecar).  The corpus is replayed by a plain driver
# in every build (sanitizer builds included); the libFuzzer binaries are
# built only with clang and -DVT_FUZZ=ON, which also builds vt_core and
# vt_analyze with ASan+UBSan and coverage, so that the fuzzer sanitizes
# everything the targets call (scripts/fuzz.sh builds and runs them):
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DVT_FUZZ=ON -DVT_BUILD_INJECT=OFF
#   cmake --build build-fuzz --target fuzz_reader fuzz_analyze fuzz_export fuzz_sidecar fuzz_render
# fuzz_render drives the renderers (dump, the reports, diff) from decoded
# events; its inputs are record streams it wraps into a zstd frame.
option(VT_FUZZ "Build libFuzzer targets (clang only)" OFF)

add_executable(fuzz_reader_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_reader.c ${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_reader_replay PRIVATE vt_core)
add_test(NAME fuzz.reader.replay
  COMMAND fuzz_reader_replay ${CMAKE_CURRENT_LIST_DIR}/corpus ${CMAKE_CURRENT_LIST_DIR}/regress ${VT_TEST_DATA})
set_tests_properties(fuzz.reader.replay PROPERTIES LABELS "fuzz;reader")

add_executable(fuzz_analyze_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_analyze.c ${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_analyze_replay PRIVATE vt_analyze vt_core)
add_test(NAME fuzz.analyze.replay
  COMMAND fuzz_analyze_replay ${CMAKE_CURRENT_LIST_DIR}/corpus ${CMAKE_CURRENT_LIST_DIR}/regress ${VT_TEST_DATA})
set_tests_properties(fuzz.analyze.replay PROPERTIES LABELS "fuzz;analyze")

add_executable(fuzz_export_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_export.c ${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_export_replay PRIVATE vt_analyze vt_core)
add_test(NAME fuzz.export.replay
  COMMAND fuzz_export_replay ${CMAKE_CURRENT_LIST_DIR}/corpus ${CMAKE_CURRENT_LIST_DIR}/regress ${VT_TEST_DATA})
set_tests_properties(fuzz.export.replay PROPERTIES LABELS "fuzz;analyze")

# the renderers (dump, reports, diff) from decoded events: builtin-dump.c
# compiled in (vt_dump_file), its own seeds (decompressed record streams)
# beside the shared corpus
add_executable(fuzz_render_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_render.c ${CMAKE_CURRENT_LIST_DIR}/replay.c
               ${CMAKE_SOURCE_DIR}/src/cli/builtin-dump.c)
target_include_directories(fuzz_render_replay PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(fuzz_render_replay PRIVATE vt_analyze vt_core vt_zstd)
add_test(NAME fuzz.render.replay
  COMMAND fuzz_render_replay ${CMAKE_CURRENT_LIST_DIR}/corpus-render ${CMAKE_CURRENT_LIST_DIR}/corpus
          ${CMAKE_CURRENT_LIST_DIR}/regress)
set_tests_properties(fuzz.render.replay PROPERTIES LABELS "fuzz;analyze")

add_executable(fuzz_sidecar_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_sidecar.c ${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_include_directories(fuzz_sidecar_replay PRIVATE ${CMAKE_SOURCE_DIR}/src/analyze)
target_link_libraries(fuzz_sidecar_replay PRIVATE vt_analyze vt_core)
add_test(NAME fuzz.sidecar.replay
  COMMAND fuzz_sidecar_replay ${CMAKE_CURRENT_LIST_DIR}/corpus ${CMAKE_CURRENT_LIST_DIR}/regress)
set_tests_properties(fuzz.sidecar.replay PROPERTIES LABELS "fuzz;analyze")

if(VT_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VT_FUZZ needs clang (CC=clang)")
  endif()
  set(VT_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
  foreach(lib vt_core vt_analyze)
    target_compile_options(${lib} PRIVATE ${VT_FUZZ_FLAGS})
  endforeach()
  # the reader's buffers scaled to fuzz inputs (src/core/vt_reader_int.h)
  target_compile_definitions(vt_core PRIVATE VT_READER_SMALL_BUFFERS)
  # and the analyzer's freed-address cache (src/analyze/vt_replay_int.h)
  target_compile_definitions(vt_analyze PRIVATE VT_ANALYZE_SMALL_BUFFERS)
  foreach(t reader analyze export sidecar render)
    add_executable(fuzz_${t} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${t}.c)
    target_compile_options(fuzz_${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer,address,undefined)
  endforeach()
  target_link_libraries(fuzz_reader PRIVATE vt_core)
  target_link_libraries(fuzz_analyze PRIVATE vt_analyze vt_core)
  target_link_libraries(fuzz_export PRIVATE vt_analyze vt_core)
  target_compile_definitions(fuzz_export PRIVATE VT_FUZZ_ONE_EXPORTER)
  target_include_directories(fuzz_sidecar PRIVATE ${CMAKE_SOURCE_DIR}/src/analyze)
  target_sources(fuzz_render PRIVATE ${CMAKE_SOURCE_DIR}/src/cli/builtin-dump.c)
  target_include_directories(fuzz_render PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
  target_link_libraries(fuzz_render PRIVATE vt_analyze vt_core vt_zstd)
  target_link_libraries(fuzz_sidecar PRIVATE vt_analyze vt_core)
endif()

# Crafted inputs too big to commit, generated: a string-table memory bomb and
# a 1 M-deep stack chain; every command stays in bounded memory and time.
add_executable(gen_crafted ${CMAKE_CURRENT_LIST_DIR}/gen_crafted.c)
target_link_libraries(gen_crafted PRIVATE vt_reader_testlib)
add_test(NAME fuzz.crafted
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/crafted.sh $<TARGET_FILE:gen_crafted> $<TARGET_FILE:vramtrace>)
# notsan: TSan's shadow memory doubles the resident set the test caps
set_tests_properties(fuzz.crafted PROPERTIES LABELS "fuzz;notsan" TIMEOUT 300)
