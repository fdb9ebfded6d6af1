# cpack_project.cmake - read by cpack (CPACK_PROJECT_CONFIG_FILE) when it
# packs.  The Debian package's one dependency, libc6, with the glibc floor
# that scripts/wheel_audit.py measures of the built binaries (their
# highest GLIBC_ symbol version): what the wheel's platform tag says too.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(vt_elfs ${CPACK_VT_BINARY_DIR}/vramtrace)
  foreach(lib libvramtrace.so libvramtrace_cupti.so)
    if(EXISTS ${CPACK_VT_BINARY_DIR}/${lib})
      list(APPEND vt_elfs ${CPACK_VT_BINARY_DIR}/${lib})
    endif()
  endforeach()
  execute_process(COMMAND python3 ${CPACK_VT_SOURCE_DIR}/scripts/wheel_audit.py --floor ${vt_elfs}
                  OUTPUT_VARIABLE vt_floor OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE vt_rc ERROR_VARIABLE vt_err)
  if(vt_rc EQUAL 0 AND vt_floor MATCHES "^[0-9]+\\.[0-9]+$")
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${vt_floor})")
  else()
    message(WARNING "scripts/wheel_audit.py: ${vt_err}; Depends: libc6 without a version")
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6")
  endif()
endif()
