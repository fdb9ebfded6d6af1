# bench/pystack.cmake - cost of a GIL-free Python stack capture.
# `cmake --build B --target bench_pystack` runs bench/pystack_bench.py on
# every pyenv version of tests/inject/python.cmake (30 Python frames, loop inside C).
if(TARGET vt_pystack)
  add_library(vt_pystack_benchlib SHARED ${PROJECT_SOURCE_DIR}/tests/inject/vt_pystack_testlib.c)
  target_link_libraries(vt_pystack_benchlib PRIVATE vt_pystack Threads::Threads)
  set_target_properties(vt_pystack_benchlib PROPERTIES C_VISIBILITY_PRESET hidden)
  if(NOT VT_PY_VERSIONS)
    set(VT_PY_VERSIONS 3.10.13 3.11.7 3.12.1 3.13.0)
  endif()
  set(_vt_pybench_cmds)
  foreach(v ${VT_PY_VERSIONS})
    list(APPEND _vt_pybench_cmds COMMAND ${CMAKE_COMMAND} -E env PYENV_VERSION=${v} python3
         ${CMAKE_CURRENT_LIST_DIR}/pystack_bench.py $<TARGET_FILE:vt_pystack_benchlib> 30)
  endforeach()
  add_custom_target(bench_pystack ${_vt_pybench_cmds} DEPENDS vt_pystack_benchlib
                    COMMENT "Python stack capture cost, 30 frames, per Python version" VERBATIM)
endif()
