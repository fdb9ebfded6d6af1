# src/analyze link settings: core, elfutils libdw (libdwfl) for
# symbolization, libstdc++ for __cxa_demangle, libm for the statistics.
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
target_include_directories(vt_analyze PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_analyze PRIVATE vt_core PkgConfig::LIBDW stdc++ m)
