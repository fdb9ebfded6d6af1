# tests/gpu/tests.cmake - the trace checker used by scripts/gpu-test.sh on
# the GPU machine (not a ctest test: it needs traces recorded there).
add_executable(vt_gpucheck ${CMAKE_CURRENT_LIST_DIR}/vt_gpucheck.c)
target_link_libraries(vt_gpucheck PRIVATE vt_core)

# CI replay of real GPU traces (tests/data/gpu-*.zst, recorded on the H200
# by scripts/gpu-test.sh) against the expectations their programs printed;
# call-site names need the traced binaries, so only non-empty stacks are
# required here.
foreach(t alloc-basic alloc-async alloc-vmm oom threads crash-segv crash-kill nostacks
          forkexec-parent forkexec-child torch-default torch-expandable torch-async
          launches)
  add_test(NAME gpu.replay.${t}
           COMMAND vt_gpucheck --no-symbols ${VT_TEST_DATA}/gpu-${t}.zst ${VT_TEST_DATA}/gpu-${t}.expect)
endforeach()

# The ground-truth matrix (issue 33) runs on the GPU machine
# (tests/gpu/check_matrix.sh); here only what needs no torch: its cells
# and their arguments, and prog.py's --help.
add_test(NAME gpu.matrix.dry-run COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/matrix/run.py --dry-run)
add_test(NAME gpu.matrix.prog-help COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/matrix/prog.py --help)

# The two-GPU job check (issue 39, tests/gpu/check_dist.sh) without a GPU:
# stand-ins for nvidia-smi and torchrun (tests/gpu/dist_fake/) leave the
# analyzer's synthetic jobs where the job would record, so every step of
# the check runs here as it will on nvidia-h200-x2.
if(TARGET vramtrace_loader)
  add_test(NAME gpu.check_dist.plumbing
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dist_fake.sh $<TARGET_FILE:vramtrace>
                   $<TARGET_FILE:vramtrace_loader> ${VT_ANALYZE_TRACES})
  set_tests_properties(gpu.check_dist.plumbing PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
endif()
