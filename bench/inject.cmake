# bench/inject.cmake - benchmarks of the injection library's CPU parts.
add_executable(bench_unwind ${CMAKE_CURRENT_LIST_DIR}/bench_unwind.c)
target_link_libraries(bench_unwind PRIVATE vt_inject_common Threads::Threads)
target_compile_options(bench_unwind PRIVATE -O2 -fomit-frame-pointer -fno-optimize-sibling-calls)

# The CUPTI cost floor for the GPU benchmarks (bench/gpu_bench.py).
if(VT_HAVE_CUPTI)
  add_library(vt_cupti_floor SHARED ${CMAKE_CURRENT_LIST_DIR}/cupti_floor.c)
  set_target_properties(vt_cupti_floor PROPERTIES C_VISIBILITY_PRESET hidden
    BUILD_RPATH "${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib")
  target_link_libraries(vt_cupti_floor PRIVATE vt_inject_common CUDA::cupti)
endif()

# Per-event CPU cost of the injection path (clock, unwind, emit).
add_executable(bench_emit ${CMAKE_CURRENT_LIST_DIR}/bench_emit.c)
target_link_libraries(bench_emit PRIVATE vt_inject_common vt_core Threads::Threads)
target_compile_options(bench_emit PRIVATE -O2 -fomit-frame-pointer -fno-optimize-sibling-calls)
if(VT_HAVE_CUPTI)
  target_compile_definitions(bench_emit PRIVATE VT_BENCH_CUPTI=1)
  target_link_libraries(bench_emit PRIVATE CUDA::cupti)
  set_target_properties(bench_emit PROPERTIES BUILD_RPATH "${CUDAToolkit_LIBRARY_DIR}")
endif()

# libvramtrace-empty.so: the library with its driver callbacks' bodies
# compiled out (VT_BENCH_EMPTY_CALLBACKS), everything else as shipped
# (threads, clock, kernel activity, NVTX and resource callbacks): what the
# library costs apart from its allocation callbacks ("traced-empty" in
# bench/bench_configs.py).
if(VT_HAVE_CUPTI AND TARGET vramtrace_inject)
  add_library(vt_bench_empty SHARED ${PROJECT_SOURCE_DIR}/src/inject/vt_inject.c)
  get_target_property(_vt_rpath vramtrace_inject BUILD_RPATH)
  set_target_properties(vt_bench_empty PROPERTIES OUTPUT_NAME vramtrace-empty C_VISIBILITY_PRESET hidden
    BUILD_RPATH "${_vt_rpath}")
  target_compile_definitions(vt_bench_empty PRIVATE VT_BENCH_EMPTY_CALLBACKS=1
    $<$<TARGET_EXISTS:vt_pystack>:VT_HAVE_PYSTACK=1>)
  target_link_libraries(vt_bench_empty PRIVATE
    vt_inject_common vt_core $<TARGET_NAME_IF_EXISTS:vt_pystack>
    CUDA::cupti CUDA::cuda_driver Threads::Threads ${CMAKE_DL_LIBS})
  target_link_options(vt_bench_empty PRIVATE
    -Wl,--version-script=${PROJECT_SOURCE_DIR}/src/inject/exports.map -Wl,--no-undefined)
endif()
