# src/analyze link settings: core, elfutils libdw (libdwfl) for
# symbolization, libstdc++ for __cxa_demangle, libm for the statistics.
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
target_include_directories(vt_analyze PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_analyze PRIVATE vt_core PkgConfig::LIBDW stdc++ m)
# The replay's batch loop without GCC's SLP vectorizer (on at -O2 since GCC
# 12): it pairs neighbouring 64-bit counters into SSE registers, then needs
# shuffles to take them apart again (-2.3 instructions per record for
# report, BENCHMARKS.md: analyze).
set_source_files_properties(vt_replay.c vt_replay_account.c vt_blocks.c PROPERTIES COMPILE_OPTIONS -fno-tree-slp-vectorize)
