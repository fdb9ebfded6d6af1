# tests/core/writer.cmake: the crash-safe trace writer (src/core/vt_writer*.c), checked
# with an independent decoder (wt_decode.c: zstd + protobuf-c, not vt_reader).
add_library(vt_writer_testlib STATIC ${CMAKE_CURRENT_LIST_DIR}/wt_decode.c)
target_link_libraries(vt_writer_testlib PUBLIC vt_core vt_proto vt_zstd vt_cmocka Threads::Threads)
target_include_directories(vt_writer_testlib PUBLIC ${CMAKE_CURRENT_LIST_DIR})

foreach(t roundtrip threads crash files batch clock)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_writer_${t}.c)
    add_executable(test_writer_${t} ${CMAKE_CURRENT_LIST_DIR}/test_writer_${t}.c)
    target_link_libraries(test_writer_${t} PRIVATE vt_writer_testlib)
    add_test(NAME core.writer.${t} COMMAND test_writer_${t})
    set_tests_properties(core.writer.${t} PROPERTIES TIMEOUT 300 LABELS writer)
  endif()
endforeach()

# The crash tests fork children that start writer threads; TSan only allows
# that with die_after_fork=0.
if(TARGET test_writer_crash AND VT_SANITIZE MATCHES "thread")
  set_tests_properties(core.writer.crash PROPERTIES ENVIRONMENT "TSAN_OPTIONS=die_after_fork=0")
endif()
