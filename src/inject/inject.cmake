# src/inject/inject.cmake - the injection library (issue 3).
# vt_inject_common: CPU-testable parts (configuration, output naming, module
# map, native unwinder, the benchmark gate), always built.  vramtrace_inject (libvramtrace.so):
# the CUPTI glue, only with CUPTI; exports InitializeInjection only.
add_library(vt_inject_common STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_config.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_unwind.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_gate.c)
set_target_properties(vt_inject_common PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(vt_inject_common PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_inject_common PUBLIC vt_core Threads::Threads ${CMAKE_DL_LIBS})
target_compile_options(vt_inject_common PRIVATE -fvisibility=hidden -O2)

if(VT_HAVE_CUPTI)
  add_library(vramtrace_inject SHARED ${CMAKE_CURRENT_SOURCE_DIR}/vt_inject.c)
  set_target_properties(vramtrace_inject PROPERTIES
    OUTPUT_NAME vramtrace
    C_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/exports.map
    # libcupti.so.13 is found by soname: if the process already loaded one
    # (PyTorch bundles its own), that copy is used; else these paths.
    BUILD_RPATH "$ORIGIN;${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib;/usr/local/cuda/extras/CUPTI/lib64"
    INSTALL_RPATH "$ORIGIN;/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib;/usr/local/cuda/extras/CUPTI/lib64")
  target_compile_definitions(vramtrace_inject PRIVATE
    $<$<TARGET_EXISTS:vt_pystack>:VT_HAVE_PYSTACK=1>)
  target_link_libraries(vramtrace_inject PRIVATE
    vt_inject_common vt_core $<TARGET_NAME_IF_EXISTS:vt_pystack>
    CUDA::cupti CUDA::cuda_driver Threads::Threads ${CMAKE_DL_LIBS})
  target_link_options(vramtrace_inject PRIVATE
    -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/exports.map
    -Wl,--no-undefined -Wl,--build-id)
  # build/libvramtrace.so, so that CUDA_INJECTION64_PATH=build/libvramtrace.so works.
  add_custom_command(TARGET vramtrace_inject POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:vramtrace_inject> ${CMAKE_BINARY_DIR}/libvramtrace.so
    COMMENT "copy libvramtrace.so to the build root")
endif()
