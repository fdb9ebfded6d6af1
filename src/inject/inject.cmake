# src/inject/inject.cmake - the injection library.
# vt_inject_common: CPU-testable parts (configuration, output naming, module
# map, native unwinder), always built.  vramtrace_inject (libvramtrace.so):
# the CUPTI glue, only with CUPTI; exports InitializeInjection and the
# memory hooks' two entry points (exports.map).
add_library(vt_inject_common STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_config.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_modmap.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_cfi.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_unwind.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_got.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_actmux.c
  ${CMAKE_CURRENT_SOURCE_DIR}/vt_marktab.c)
set_target_properties(vt_inject_common PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(vt_inject_common PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(vt_inject_common PUBLIC vt_core Threads::Threads ${CMAKE_DL_LIBS})
target_compile_options(vt_inject_common PRIVATE -fvisibility=hidden -O2)

if(VT_HAVE_CUPTI)
  # An injection library from src/inject's sources: libvramtrace.so below,
  # and the benchmarks' variants of it (bench/inject.cmake), which pass
  # their experiment switches as ARGN (compile definitions) and compile
  # vt_pystack.c in with them (a switch may reach into it).
  function(vt_inject_library target)
    set(dir ${CMAKE_CURRENT_FUNCTION_LIST_DIR}) # src/inject, wherever it is called from
    set(srcs ${dir}/vt_inject.c ${dir}/vt_inject_driver.c ${dir}/vt_inject_vmm.c ${dir}/vt_inject_devices.c
             ${dir}/vt_inject_nvtx.c ${dir}/vt_inject_activity.c ${dir}/vt_inject_sampler.c ${dir}/vt_inject_exit.c
             ${dir}/vt_inject_torch.c ${dir}/vt_inject_hook.c ${dir}/vt_inject_test.c)
    if(ARGN AND TARGET vt_pystack)
      list(APPEND srcs ${dir}/vt_pystack.c ${dir}/vt_pystack_layout.c ${dir}/vt_pystack_merge.c)
    endif()
    if(ARGN)
      list(APPEND srcs ${dir}/vt_modmap.c ${dir}/vt_cfi.c ${dir}/vt_unwind.c ${dir}/vt_got.c ${dir}/vt_actmux.c ${dir}/vt_marktab.c) # their copies in vt_inject_common are then not linked
    endif()
    if("VT_BENCH" IN_LIST ARGN) # benchmark builds: the gate and CUPTI attributes (bench/)
      list(APPEND srcs ${PROJECT_SOURCE_DIR}/bench/vt_gate.c)
    endif()
    add_library(${target} SHARED ${srcs})
    if("VT_BENCH" IN_LIST ARGN)
      target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/bench)
    endif()
    set_target_properties(${target} PROPERTIES
      C_VISIBILITY_PRESET hidden
      LINK_DEPENDS ${dir}/exports.map
      # libcupti.so.13 is found by soname: if the process already loaded one
      # (PyTorch bundles its own), that copy is used; else these paths.
      BUILD_RPATH "$ORIGIN;${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib;/usr/local/cuda/extras/CUPTI/lib64"
      INSTALL_RPATH "$ORIGIN;/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib;/usr/local/cuda/extras/CUPTI/lib64")
    target_compile_definitions(${target} PRIVATE ${ARGN}
      $<$<TARGET_EXISTS:vt_pystack>:VT_HAVE_PYSTACK=1>)
    set(pystack $<TARGET_NAME_IF_EXISTS:vt_pystack>)
    if(ARGN)
      target_compile_options(${target} PRIVATE -O2) # as vt_pystack's own -O2
      set(pystack)
    endif()
    target_link_libraries(${target} PRIVATE
      vt_inject_common vt_core ${pystack} CUDA::cupti CUDA::cuda_driver Threads::Threads ${CMAKE_DL_LIBS})
    target_link_options(${target} PRIVATE
      -Wl,--version-script=${dir}/exports.map
      -Wl,--no-undefined -Wl,--build-id)
  endfunction()

  # The library proper, libvramtrace_cupti.so: it links libcupti.so.N by
  # soname.  What CUDA_INJECTION64_PATH names is libvramtrace.so
  # (vt_loader.c, libc and libdl only): it finds the program's CUPTI (already
  # loaded, the Python environment's nvidia-cuda-cupti, the loader's path, the
  # toolkit), then loads this one beside it, so that a CUPTI off the default
  # path is no load failure (docs/ARCHITECTURE.md, "The wheel").
  vt_inject_library(vramtrace_inject)
  set_target_properties(vramtrace_inject PROPERTIES OUTPUT_NAME vramtrace_cupti)
  add_library(vramtrace_loader SHARED ${CMAKE_CURRENT_SOURCE_DIR}/vt_loader.c)
  set_target_properties(vramtrace_loader PROPERTIES OUTPUT_NAME vramtrace C_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/exports.map)
  target_compile_definitions(vramtrace_loader PRIVATE
    VT_CUPTI_SONAME="libcupti.so.${CUDAToolkit_VERSION_MAJOR}" VT_CUPTI_PIP_DIR="cu${CUDAToolkit_VERSION_MAJOR}")
  target_link_libraries(vramtrace_loader PRIVATE ${CMAKE_DL_LIBS})
  target_link_options(vramtrace_loader PRIVATE
    -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/exports.map -Wl,--no-undefined -Wl,--build-id)
  add_dependencies(vramtrace_loader vramtrace_inject) # one is no use without the other
  # build/libvramtrace.so and its library proper beside it, so that
  # CUDA_INJECTION64_PATH=build/libvramtrace.so works.
  add_custom_command(TARGET vramtrace_loader POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:vramtrace_loader> $<TARGET_FILE:vramtrace_inject> ${CMAKE_BINARY_DIR}/
    COMMENT "copy libvramtrace.so and libvramtrace_cupti.so to the build root")
  # the library proper relinks alone when only its sources change
  add_custom_command(TARGET vramtrace_inject POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:vramtrace_inject> ${CMAKE_BINARY_DIR}/
    COMMENT "copy libvramtrace_cupti.so to the build root")
endif()
