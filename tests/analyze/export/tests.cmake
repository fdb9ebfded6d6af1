# tests/analyze/export: `vramtrace export` on every real fixture, validated
# per format (export.sh), with golden text forms in tests/analyze/golden;
# the Perfetto export and the project's subset proto against Perfetto's
# official schema as perfetto_fields.tsv records it (perfetto_schema.sh).
find_program(VT_PROTOC protoc)
if(VT_PROTOC)
  add_test(NAME analyze.export
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/export.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_CURRENT_LIST_DIR}/../golden)
  set_tests_properties(analyze.export PROPERTIES LABELS "analyze;golden" TIMEOUT 900)
  add_test(NAME analyze.export.perfetto_schema
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/perfetto_schema.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA})
  set_tests_properties(analyze.export.perfetto_schema PROPERTIES LABELS "analyze" TIMEOUT 300)
endif()
