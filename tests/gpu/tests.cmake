# tests/gpu/tests.cmake - the trace checker used by scripts/gpu-test.sh on
# the GPU machine (not a ctest test: it needs traces recorded there).
add_executable(vt_gpucheck ${CMAKE_CURRENT_LIST_DIR}/vt_gpucheck.c)
target_link_libraries(vt_gpucheck PRIVATE vt_core)
