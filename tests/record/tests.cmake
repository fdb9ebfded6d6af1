# tests/record: `vramtrace record` (src/cli/builtin-record.c, record_env.c).
# Unit tests of the pure logic, and end-to-end runs of the real binary with a
# stand-in command (record_child) that never loads CUDA.
add_executable(test_record_env
  ${CMAKE_CURRENT_LIST_DIR}/test_record_env.c
  ${CMAKE_SOURCE_DIR}/src/cli/record_env.c)
target_include_directories(test_record_env PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(test_record_env PRIVATE vt_core vt_cmocka)
add_test(NAME record_env COMMAND test_record_env)

add_executable(record_child ${CMAKE_CURRENT_LIST_DIR}/record_child.c)
target_include_directories(record_child PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(record_child PRIVATE vt_core)

add_executable(test_record_cli ${CMAKE_CURRENT_LIST_DIR}/test_record_cli.c
  ${CMAKE_SOURCE_DIR}/src/cli/record_env.c)
target_include_directories(test_record_cli PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(test_record_cli PRIVATE vt_core vt_cmocka util)
add_test(NAME record_cli COMMAND test_record_cli $<TARGET_FILE:vramtrace> $<TARGET_FILE:record_child>)
set_tests_properties(record_cli PROPERTIES TIMEOUT 120)
add_dependencies(test_record_cli vramtrace record_child)
