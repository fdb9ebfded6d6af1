# src/analyze link settings: core, elfutils libdw (libdwfl) for
# symbolization, zlib for the page's packed data (vt_page_pack.c),
# libstdc++ for __cxa_demangle, libm for the statistics, pthreads for
# resolving several modules at once (vt_symbols.c).
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
target_include_directories(vt_analyze PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
# elfutils statically, as protobuf-c and zstd, so that the binary (and the
# wheel, scripts/wheel.sh) needs libc and libm only.  libdw.a brings what
# it decompresses with: liblzma, libbz2, zlib (libz.a also serves the
# page's packing, so ZLIB::ZLIB, the shared one, is left out then); its
# debuginfod client stays a dlopen of libdebuginfod.so.1, absent = off.
# elfutils is GPL-2+ or LGPL-3+: linked statically under the LGPL, which
# a program whose source is public meets (docs/ARCHITECTURE.md, "The
# wheel"; the notices ship with the binary).
option(VT_STATIC_LIBDW "Link elfutils' libdw and libelf statically when their archives exist" ON)
set(vt_dw_static "")
if(VT_STATIC_LIBDW)
  foreach(a dw elf lzma bz2 z)
    find_library(VT_LIB${a}_A NAMES lib${a}.a HINTS ${LIBDW_LIBRARY_DIRS})
    if(NOT VT_LIB${a}_A)
      message(WARNING "lib${a}.a not found: linking the shared libdw")
      set(vt_dw_static "")
      break()
    endif()
    list(APPEND vt_dw_static ${VT_LIB${a}_A})
  endforeach()
endif()
# libstdc++ (__cxa_demangle only) from its archive too, except under the
# sanitizers, whose runtimes want the shared one.
set(vt_stdcxx stdc++)
if(NOT VT_SANITIZE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.a
                  OUTPUT_VARIABLE vt_stdcxx_a OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${vt_stdcxx_a}" AND EXISTS "${vt_stdcxx_a}")
    set(vt_stdcxx ${vt_stdcxx_a})
  endif()
endif()
if(vt_dw_static)
  target_include_directories(vt_analyze PRIVATE ${LIBDW_INCLUDE_DIRS})
  target_link_libraries(vt_analyze PRIVATE vt_core ${vt_dw_static} vt_zstd Threads::Threads ${CMAKE_DL_LIBS} ${vt_stdcxx} m)
else()
  target_link_libraries(vt_analyze PRIVATE vt_core PkgConfig::LIBDW ZLIB::ZLIB ${vt_stdcxx} m Threads::Threads)
endif()
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
