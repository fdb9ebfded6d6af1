# tests/core/reader.cmake: the streaming reader (src/core/vt_reader*.c).
add_library(vt_reader_testlib STATIC
  ${CMAKE_CURRENT_LIST_DIR}/vt_testenc.c
  ${CMAKE_CURRENT_LIST_DIR}/reader_check.c)
target_include_directories(vt_reader_testlib PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_reader_testlib PUBLIC vt_core vt_proto vt_zstd vt_cmocka)

add_executable(test_reader ${CMAKE_CURRENT_LIST_DIR}/test_reader.c)
target_link_libraries(test_reader PRIVATE vt_reader_testlib)
add_test(NAME core.reader.unit COMMAND test_reader)
set_tests_properties(core.reader.unit PROPERTIES LABELS "reader")

# Fixture generator for tests/data/reader-sample.zst (scripts/update-golden.sh).
add_executable(vt_gen_fixture ${CMAKE_CURRENT_LIST_DIR}/gen_fixture.c)
target_link_libraries(vt_gen_fixture PRIVATE vt_reader_testlib)

# Writer -> reader round trip (src/core/vt_writer.c output read back).
add_executable(test_reader_roundtrip ${CMAKE_CURRENT_LIST_DIR}/test_roundtrip.c)
target_link_libraries(test_reader_roundtrip PRIVATE vt_reader_testlib)
add_test(NAME core.reader.roundtrip COMMAND test_reader_roundtrip)
set_tests_properties(core.reader.roundtrip PROPERTIES LABELS "reader" TIMEOUT 300)

# KernelBatch and KernelBlock records (src/core/vt_reader_columns.c):
# hand-built, corrupt, writer traces with batches split by flushes and
# frames, random damage, truncation.
add_executable(test_reader_columns ${CMAKE_CURRENT_LIST_DIR}/test_reader_columns.c)
target_link_libraries(test_reader_columns PRIVATE vt_reader_testlib)
add_test(NAME core.reader.columns COMMAND test_reader_columns)
set_tests_properties(core.reader.columns PROPERTIES LABELS "reader" TIMEOUT 300)

# The same three without BMI2's pext (vt_reader.c and vt_reader_columns.c
# choose it at run time where it is fast): the shift-based varint decoders
# stay tested on machines that have it.
add_test(NAME core.reader.unit.nopext COMMAND test_reader)
add_test(NAME core.reader.roundtrip.nopext COMMAND test_reader_roundtrip)
add_test(NAME core.reader.columns.nopext COMMAND test_reader_columns)
set_tests_properties(core.reader.unit.nopext core.reader.roundtrip.nopext core.reader.columns.nopext PROPERTIES
  LABELS "reader" TIMEOUT 300 ENVIRONMENT "VT_READER_NO_PEXT=1")

# A real H200 trace of the KernelBatch era (tests/data at af58c65: its 100
# kernels in one KernelBatch record): read exactly as the reader of that
# time did (golden made with it), since the writer now writes KernelBlock.
add_test(NAME core.reader.kbatch_fixture
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
          ${CMAKE_CURRENT_LIST_DIR}/golden/kbatch-gpu-alloc-basic.txt 0 dump --stacks kbatch-gpu-alloc-basic.zst)
set_tests_properties(core.reader.kbatch_fixture PROPERTIES LABELS "reader;golden")

# A real H200 trace of format 1 (tests/data/gpu-torch-async.zst before the
# fixtures were recorded in format 2, with MemBlock records): its report,
# made first by the vramtrace of format 1 (a73aeb6) and refreshed with
# scripts/update-golden.sh only when the report's rendering changed.
add_test(NAME core.reader.v1_fixture
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
          ${CMAKE_CURRENT_LIST_DIR}/golden/v1-gpu-torch-async.report.txt 0 report --no-symbols v1-gpu-torch-async.zst)
set_tests_properties(core.reader.v1_fixture PROPERTIES LABELS "reader;golden")
