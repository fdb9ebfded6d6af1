# src/analyze link settings: core, elfutils libdw (libdwfl) for
# symbolization, zlib for the page's packed data (vt_page_pack.c),
# libstdc++ for __cxa_demangle, libm for the statistics.
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
find_package(ZLIB REQUIRED)
target_include_directories(vt_analyze PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_analyze PRIVATE vt_core vt_zstd PkgConfig::LIBDW ZLIB::ZLIB stdc++ m)
# The replay's batch loop without GCC's SLP vectorizer (on at -O2 since GCC
# 12): it pairs neighbouring 64-bit counters into SSE registers, then needs
# shuffles to take them apart again (-2.3 instructions per record for
# report, BENCHMARKS.md: analyze).
set_source_files_properties(vt_replay.c vt_replay_account.c vt_blocks.c PROPERTIES COMPILE_OPTIONS -fno-tree-slp-vectorize)
# The HTML report's page (viewer/), inlined and embedded at build time.
set(VT_VIEWER_DIR ${PROJECT_SOURCE_DIR}/viewer)
add_custom_command(
  OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/vt_viewer_page.c
  COMMAND ${CMAKE_COMMAND} -DSRC=${VT_VIEWER_DIR} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/vt_viewer_page.c
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_viewer.cmake
  DEPENDS ${VT_VIEWER_DIR}/index.html ${VT_VIEWER_DIR}/style.css ${VT_VIEWER_DIR}/lib.js ${VT_VIEWER_DIR}/app.js
          ${PROJECT_SOURCE_DIR}/cmake/embed_viewer.cmake
  COMMENT "embed viewer/ (the HTML report's page)")
target_sources(vt_analyze PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/vt_viewer_page.c)
