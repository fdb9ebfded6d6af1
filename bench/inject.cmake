# bench/inject.cmake - benchmarks of the injection library's CPU parts.
add_executable(bench_unwind ${CMAKE_CURRENT_LIST_DIR}/bench_unwind.c)
target_link_libraries(bench_unwind PRIVATE vt_inject_common Threads::Threads)
target_compile_options(bench_unwind PRIVATE -O2 -fomit-frame-pointer -fno-optimize-sibling-calls)

# The CUPTI cost floor for the GPU benchmarks (bench/gpu_bench.py).
if(VT_HAVE_CUPTI)
  add_library(vt_cupti_floor SHARED ${CMAKE_CURRENT_LIST_DIR}/cupti_floor.c)
  set_target_properties(vt_cupti_floor PROPERTIES C_VISIBILITY_PRESET hidden
    BUILD_RPATH "${CUDAToolkit_LIBRARY_DIR};/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib")
  target_sources(vt_cupti_floor PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vt_gate.c)
  target_include_directories(vt_cupti_floor PRIVATE ${CMAKE_CURRENT_LIST_DIR})
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

# Variants of libvramtrace.so for the GPU benchmarks (bench/bench_configs.py):
# the library's sources compiled with VT_BENCH (the gate of bench/vt_gate.h,
# VRAMTRACE_BENCH_GATE, and CUPTI activity attributes of vt_bench_cupti.h,
# VT_BENCH_CUPTI_ATTRS, which the shipped library does not read) and one
# experiment switch each, to tell apart where the tensor-mode step's cost
# goes.  Not shipped.
#   libvramtrace-bench.so        VT_BENCH alone: the shipped library's code;
#   libvramtrace-empty.so        VT_BENCH_EMPTY_CALLBACKS: the driver
#       callbacks' bodies compiled out, everything else as shipped (threads,
#       clock, kernel activity, NVTX and resource callbacks);
#   libvramtrace-empty-discard.so  and VT_BENCH_DISCARD_ACTIVITY: activity
#       buffers freed unread, as bench/cupti_floor.c does;
#   libvramtrace-discard.so      VT_BENCH_DISCARD_ACTIVITY alone: the
#       shipped library with its kernel records freed unread (what
#       reading and writing them costs, against the shipped library);
#   libvramtrace-captureonly.so  VT_BENCH_CAPTURE_ONLY: stacks captured and
#       dropped (no fingerprint, no stack in the event);
#   libvramtrace-pmaddr.so       VT_BENCH_PM_ADDR: the Python walk memo
#       names code objects by address and reads nothing of them;
#   libvramtrace-verify8.so      VT_BENCH_UW_VERIFY=8: the native walk memo
#       verifies only its first 8 steps' words (unsafe: where the cost of
#       reading the host's outer stack is);
#   libvramtrace-uwnobp.so       VT_BENCH_UW_NOBP: the memo does not verify
#       the rbp loads a walk used (unsafe).
function(vt_bench_variant name)
  if(NOT (VT_HAVE_CUPTI AND TARGET vramtrace_inject))
    return()
  endif()
  vt_inject_library(vt_bench_${name} VT_BENCH ${ARGN}) # src/inject/inject.cmake
  set_target_properties(vt_bench_${name} PROPERTIES OUTPUT_NAME vramtrace-${name})
endfunction()
vt_bench_variant(bench)
vt_bench_variant(empty VT_BENCH_EMPTY_CALLBACKS)
vt_bench_variant(empty-discard VT_BENCH_EMPTY_CALLBACKS VT_BENCH_DISCARD_ACTIVITY)
vt_bench_variant(discard VT_BENCH_DISCARD_ACTIVITY)
vt_bench_variant(captureonly VT_BENCH_CAPTURE_ONLY)
vt_bench_variant(pmaddr VT_BENCH_PM_ADDR)
vt_bench_variant(verify8 VT_BENCH_UW_VERIFY=8)
vt_bench_variant(uwnobp VT_BENCH_UW_NOBP)

# The callback's capture between rounds of host work, for
# bench/capture_pollution.sh (cachegrind: what a capture displaces).
if(TARGET vt_pystack)
  add_library(vt_capture_bench SHARED ${CMAKE_CURRENT_LIST_DIR}/capture_bench.c)
  target_compile_definitions(vt_capture_bench PRIVATE VT_HAVE_PYSTACK=1)
  target_compile_options(vt_capture_bench PRIVATE -O2)
  target_link_libraries(vt_capture_bench PRIVATE vt_inject_common vt_pystack vt_core Threads::Threads)
  set_target_properties(vt_capture_bench PROPERTIES C_VISIBILITY_PRESET hidden)
  # Debian's static protobuf-c is not PIC: bind its symbols inside the library.
  target_link_options(vt_capture_bench PRIVATE -Wl,-Bsymbolic)
endif()
