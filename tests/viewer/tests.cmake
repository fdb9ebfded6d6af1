# tests/viewer: the HTML report's page (viewer/): its data transforms under
# node's own test runner, and the page in a real browser (Debian's chromium
# driven by playwright-core) on every fixture, a whole job and a diff.
# scripts/install-deps.sh installs chromium and viewer/node_modules.
find_program(VT_NODE node)
if(VT_NODE)
  add_test(NAME viewer.unit COMMAND ${VT_NODE} --test ${PROJECT_SOURCE_DIR}/viewer/test/)
  set_tests_properties(viewer.unit PROPERTIES LABELS "viewer")
  # the diff page's totals from the data it embeds (no browser needed)
  add_test(NAME viewer.diff_page
    COMMAND ${VT_NODE} ${CMAKE_CURRENT_LIST_DIR}/diff_page.js $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_BINARY_DIR}/viewer-diff)
  set_tests_properties(viewer.diff_page PROPERTIES LABELS "viewer")
  add_test(NAME viewer.browser
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/browser.sh ${VT_NODE} $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_BINARY_DIR}/viewer-pages ${PROJECT_SOURCE_DIR}/viewer)
  set_tests_properties(viewer.browser PROPERTIES LABELS "viewer" TIMEOUT 900 SKIP_RETURN_CODE 77)
  # a job of two ranks (issue 39): the page names the leaking rank with its
  # line and holder, the clean one, the one that ran out of memory
  add_test(NAME viewer.browser_jobs
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/browser.sh ${VT_NODE} $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_BINARY_DIR}/viewer-jobs ${PROJECT_SOURCE_DIR}/viewer --only-jobs
            ${VT_ANALYZE_TRACES}/job_leak ${VT_ANALYZE_TRACES}/job_oom)
  set_tests_properties(viewer.browser_jobs PROPERTIES LABELS "viewer" TIMEOUT 300 SKIP_RETURN_CODE 77
                       FIXTURES_REQUIRED analyze_traces)
  # pages built from hostile names (issue 36): whole, and no script of the trace runs
  add_test(NAME viewer.hostile
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/hostile.sh ${VT_NODE} $<TARGET_FILE:vramtrace> $<TARGET_FILE:gen_hostile>
            ${CMAKE_BINARY_DIR}/viewer-hostile ${PROJECT_SOURCE_DIR}/viewer)
  set_tests_properties(viewer.hostile PROPERTIES LABELS "viewer" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
