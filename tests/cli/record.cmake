# tests/cli/record.cmake: `vramtrace record` (src/cli/builtin-record.c, record_env.c).
# Unit tests of the pure logic, and end-to-end runs of the real binary with a
# stand-in command (record_child) that never loads CUDA.
add_executable(test_record_env
  ${CMAKE_CURRENT_LIST_DIR}/test_record_env.c
  ${CMAKE_SOURCE_DIR}/src/cli/record_env.c)
target_include_directories(test_record_env PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(test_record_env PRIVATE vt_core vt_cmocka)
add_test(NAME cli.record.env COMMAND test_record_env)

add_executable(record_child ${CMAKE_CURRENT_LIST_DIR}/record_child.c)
target_include_directories(record_child PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(record_child PRIVATE vt_core)

add_executable(test_record_cli ${CMAKE_CURRENT_LIST_DIR}/test_record_cli.c
  ${CMAKE_SOURCE_DIR}/src/cli/record_env.c)
target_include_directories(test_record_cli PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(test_record_cli PRIVATE vt_core vt_cmocka util)
add_test(NAME cli.record.cli COMMAND test_record_cli $<TARGET_FILE:vramtrace> $<TARGET_FILE:record_child>)
# notsan: TSan defers signals to its own safe points, which the forwarding
# tests (a signal sent to vramtrace alone) cannot wait for
set_tests_properties(cli.record.cli PROPERTIES TIMEOUT 120 LABELS "cli;notsan")
add_dependencies(test_record_cli vramtrace record_child)

# examples/leaky.cu: the bundled leaky CUDA program that scripts/demo.sh
# records on a machine with a GPU (build/examples/leaky).  nvcc is called
# directly (no project-wide CUDA language); built only where the injection
# library is (CUPTI found) and without sanitizers.  SASS for sm_90
# (H100/H200) plus PTX for any GPU from sm_75 on.
if(VT_HAVE_CUPTI AND NOT VT_SANITIZE)
  find_program(VT_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
  if(VT_NVCC)
    set(VT_LEAKY ${CMAKE_BINARY_DIR}/examples/leaky)
    add_custom_command(
      OUTPUT ${VT_LEAKY}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/examples
      COMMAND ${VT_NVCC} -O2 -g -lineinfo -Xcompiler -fno-omit-frame-pointer
              --generate-code arch=compute_75,code=compute_75
              --generate-code arch=compute_90,code=sm_90
              -o ${VT_LEAKY} ${CMAKE_SOURCE_DIR}/examples/leaky.cu
      DEPENDS ${CMAKE_SOURCE_DIR}/examples/leaky.cu
      COMMENT "nvcc examples/leaky.cu")
    add_custom_target(vt_example_leaky ALL DEPENDS ${VT_LEAKY})
  endif()
endif()

# cmake --install: bin/vramtrace finds lib/libvramtrace.so without help.
if(TARGET vramtrace_inject)
  set(VT_RECORD_HAVE_LIB 1)
else()
  set(VT_RECORD_HAVE_LIB 0)
endif()
add_test(NAME cli.record.install
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/install_test.sh ${CMAKE_BINARY_DIR} ${VT_RECORD_HAVE_LIB})

# The wheel (scripts/wheel.sh) of this build, installed by pip into a fresh
# venv of each Python 3.10-3.13 here, run from there.  Not under the
# sanitizers: their runtimes are NEEDED libraries no wheel may carry.
if(NOT VT_SANITIZE)
  add_test(NAME cli.wheel
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/wheel_test.sh ${CMAKE_BINARY_DIR} ${VT_RECORD_HAVE_LIB})
  set_tests_properties(cli.wheel PROPERTIES TIMEOUT 600 LABELS "cli;wheel")
endif()

# the PyTorch shim's build and cache (src/cli/record_torch.c), without torch
add_executable(test_record_torch ${CMAKE_CURRENT_LIST_DIR}/test_record_torch.c
  ${CMAKE_SOURCE_DIR}/src/cli/record_torch.c)
target_include_directories(test_record_torch PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(test_record_torch PRIVATE vt_cmocka)
add_test(NAME cli.record.torch COMMAND test_record_torch)
