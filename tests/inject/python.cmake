# tests/inject/python.cmake: vt_pystack (Python stacks without the GIL).
#  - pystack_merge: cmocka, no interpreter (init refusal, merge rules);
#  - pystack_offsets_3XX: the layout table vs each version's own headers;
#  - pystack_py_3XX: real interpreters (pyenv) calling the capture through
#    ctypes from every kind of frame, threads, recursion, concurrency;
#    pystack_py_gil_3XX: the same initialized with the GIL held (3.12+:
#    code objects named by address, a code watcher counting their end);
#  - pystack_trace_3XX: those stacks through vt_writer, `vramtrace dump`
#    and tests/gpu/pylines_check.py (the GPU check's own checker);
#    pystack_trace_inner_3XX with the library's unwinder, and
#    pystack_trace_lib_3XX with the library's whole capture (vt_capture.h);
#  - pystack_py_system, pystack_trace_system: the same with /usr/bin/python3
#    when it is 3.10-3.13 (a distribution build);
#  - pystack_refuse_39: an unsupported version is refused with a reason;
#  - pystack_layout_3XX: every layout field made wrong on purpose: init
#    refuses (or the field is unused), nothing ever crashes.
set(VT_PY_DIR ${CMAKE_CURRENT_LIST_DIR})
set(VT_PY_VERSIONS 3.10.13 3.11.7 3.12.1 3.13.0 CACHE STRING "pyenv versions tested by tests/inject/python.cmake")
if(DEFINED ENV{PYENV_ROOT})
  set(VT_PYENV_ROOT $ENV{PYENV_ROOT})
else()
  set(VT_PYENV_ROOT $ENV{HOME}/.pyenv)
endif()
find_program(VT_PYENV_PYTHON3 python3 HINTS ${VT_PYENV_ROOT}/shims NO_DEFAULT_PATH)
if(NOT VT_PYENV_PYTHON3)
  set(VT_PYENV_PYTHON3 python3)
endif()

add_library(vt_pystack_testlib SHARED ${VT_PY_DIR}/vt_pystack_testlib.c ${VT_PY_DIR}/vt_pystack_tracelib.c)
target_link_libraries(vt_pystack_testlib PRIVATE vt_pystack vt_inject_common vt_core Threads::Threads)
set_target_properties(vt_pystack_testlib PROPERTIES C_VISIBILITY_PRESET hidden)
# Debian's static protobuf-c is not PIC: bind its symbols inside the library.
target_link_options(vt_pystack_testlib PRIVATE -Wl,-Bsymbolic)
target_compile_definitions(vt_pystack_testlib PRIVATE VT_HAVE_PYSTACK=1) # vt_capture.h with Python frames

add_executable(test_pystack_merge ${VT_PY_DIR}/test_pystack_merge.c)
target_link_libraries(test_pystack_merge PRIVATE vt_pystack vt_cmocka)
add_test(NAME inject.pystack.merge COMMAND test_pystack_merge)

# a version vt_pystack does not support: refused with a reason, no crash
set(VT_PY_UNSUPPORTED 3.9.18 CACHE STRING "a pyenv version vt_pystack must refuse")
if(EXISTS ${VT_PYENV_ROOT}/versions/${VT_PY_UNSUPPORTED}/bin/python3)
  add_test(NAME inject.pystack.refuse_39
           COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${VT_PY_UNSUPPORTED}
                   ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack_refuse.py
                   $<TARGET_FILE:vt_pystack_testlib>)
else()
  message(WARNING "tests/inject: Python ${VT_PY_UNSUPPORTED} is not installed under ${VT_PYENV_ROOT}")
endif()

foreach(v ${VT_PY_VERSIONS})
  string(REGEX MATCH "^3\\.([0-9]+)" mm ${v})
  set(minor ${CMAKE_MATCH_1})
  set(inc ${VT_PYENV_ROOT}/versions/${v}/include/python3.${minor})
  if(EXISTS ${inc}/Python.h)
    add_executable(vt_pyoffsets_check_3${minor} ${VT_PY_DIR}/vt_pyoffsets_check.c)
    target_include_directories(vt_pyoffsets_check_3${minor} SYSTEM PRIVATE ${inc} ${inc}/internal)
    target_link_libraries(vt_pyoffsets_check_3${minor} PRIVATE vt_pystack)
    add_test(NAME inject.pystack.offsets_3${minor} COMMAND vt_pyoffsets_check_3${minor})
  else()
    message(WARNING "tests/inject: no headers for Python ${v} in ${inc}")
  endif()
  if(EXISTS ${VT_PYENV_ROOT}/versions/${v}/bin/python3)
    add_test(NAME inject.pystack.py_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v}
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack.py
                     $<TARGET_FILE:vt_pystack_testlib> ${v})
    set_tests_properties(inject.pystack.py_3${minor} PROPERTIES TIMEOUT 300)
    # initialized with the GIL held: 3.12+ name code objects by address
    # (a code watcher counts their destruction)
    add_test(NAME inject.pystack.py_gil_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v} VTPT_INIT_GIL=1
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack.py
                     $<TARGET_FILE:vt_pystack_testlib> ${v})
    set_tests_properties(inject.pystack.py_gil_3${minor} PROPERTIES TIMEOUT 300)
    # the same stacks through vt_writer, `vramtrace dump` and the GPU checker
    add_test(NAME inject.pystack.trace_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v}
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack_trace.py
                     $<TARGET_FILE:vt_pystack_testlib> $<TARGET_FILE:vramtrace>
                     ${CMAKE_CURRENT_BINARY_DIR}/pystack_trace)
    set_tests_properties(inject.pystack.trace_3${minor} PROPERTIES TIMEOUT 120)
    # the same with the library's unwinder ending at the eval loop (its default)
    add_test(NAME inject.pystack.trace_inner_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v} VTPT_UNWIND=inner
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack_trace.py
                     $<TARGET_FILE:vt_pystack_testlib> $<TARGET_FILE:vramtrace>
                     ${CMAKE_CURRENT_BINARY_DIR}/pystack_trace_inner)
    set_tests_properties(inject.pystack.trace_inner_3${minor} PROPERTIES TIMEOUT 120)
    # the library's own capture (vt_capture.h: memos, stack references),
    # initialized with the GIL held as in PyTorch
    add_test(NAME inject.pystack.trace_lib_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v} VTPT_UNWIND=library VTPT_INIT_GIL=1
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack_trace.py
                     $<TARGET_FILE:vt_pystack_testlib> $<TARGET_FILE:vramtrace>
                     ${CMAKE_CURRENT_BINARY_DIR}/pystack_trace_lib)
    set_tests_properties(inject.pystack.trace_lib_3${minor} PROPERTIES TIMEOUT 120)
    # a wrong layout table disables, never crashes
    add_test(NAME inject.pystack.layout_3${minor}
             COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v}
                     ${VT_PYENV_PYTHON3} ${VT_PY_DIR}/test_pystack_layout.py
                     $<TARGET_FILE:vt_pystack_testlib>)
    set_tests_properties(inject.pystack.layout_3${minor} PROPERTIES TIMEOUT 300)
  else()
    message(WARNING "tests/inject: Python ${v} is not installed under ${VT_PYENV_ROOT}")
  endif()
endforeach()

# The distribution's own python3 (a statically linked, stripped, LTO/PGO
# build, like the GPU machine's), when it is a supported version.
find_program(VT_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(VT_SYSTEM_PYTHON3)
  execute_process(COMMAND ${VT_SYSTEM_PYTHON3} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE _vt_sys_pyver OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_vt_sys_pyver MATCHES "^3\\.1[0-3]$")
    add_test(NAME inject.pystack.py_system
             COMMAND ${VT_SYSTEM_PYTHON3} ${VT_PY_DIR}/test_pystack.py $<TARGET_FILE:vt_pystack_testlib>)
    add_test(NAME inject.pystack.trace_system
             COMMAND ${VT_SYSTEM_PYTHON3} ${VT_PY_DIR}/test_pystack_trace.py
                     $<TARGET_FILE:vt_pystack_testlib> $<TARGET_FILE:vramtrace>
                     ${CMAKE_CURRENT_BINARY_DIR}/pystack_trace_system)
    set_tests_properties(inject.pystack.py_system inject.pystack.trace_system PROPERTIES TIMEOUT 300)
  endif()
endif()

# Sanitizer builds: the interpreters are not instrumented, so the sanitizer
# runtimes must be loaded first for the test library to run inside them.
# Python's own allocations at exit are not ours: leak checking off.
if(VT_SANITIZE MATCHES "address")
  set(_vt_preload "")
  foreach(rt libasan.so libubsan.so)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${rt}
                    OUTPUT_VARIABLE _p OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(EXISTS "${_p}")
      list(APPEND _vt_preload ${_p})
    endif()
  endforeach()
  string(REPLACE ";" ":" _vt_preload "${_vt_preload}")
  get_property(_vt_tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${_vt_tests})
    if(t MATCHES "^inject[.]pystack[.](py|trace|layout|refuse)")
      set_tests_properties(${t} PROPERTIES ENVIRONMENT
        "LD_PRELOAD=${_vt_preload};ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0")
    endif()
  endforeach()
elseif(VT_SANITIZE MATCHES "thread")
  get_property(_vt_tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${_vt_tests})
    if(t MATCHES "^inject[.]pystack[.](py|trace|layout|refuse)")
      set_tests_properties(${t} PROPERTIES LABELS nosan)
    endif()
  endforeach()
endif()
