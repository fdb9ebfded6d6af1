# tests/reader: the streaming reader (src/core/vt_reader.c).
add_library(vt_reader_testlib STATIC
  ${CMAKE_CURRENT_LIST_DIR}/vt_testenc.c
  ${CMAKE_CURRENT_LIST_DIR}/reader_check.c)
target_include_directories(vt_reader_testlib PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_reader_testlib PUBLIC vt_core vt_proto vt_zstd vt_cmocka)

add_executable(test_reader ${CMAKE_CURRENT_LIST_DIR}/test_reader.c)
target_link_libraries(test_reader PRIVATE vt_reader_testlib)
add_test(NAME reader.unit COMMAND test_reader)
set_tests_properties(reader.unit PROPERTIES LABELS "reader")
