# tests/cli: `vramtrace dump` (src/cli/builtin-dump.c): golden outputs on the
# small deterministic fixtures of tests/data (refresh with
# scripts/update-golden.sh), exit codes and error messages.
function(vt_dump_golden name rc)
  add_test(NAME cli.dump.${name}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_CURRENT_LIST_DIR}/golden/${name} ${rc} ${ARGN})
  set_tests_properties(cli.dump.${name} PROPERTIES LABELS "cli;golden")
endfunction()
vt_dump_golden(dump-sample.txt 0 dump reader-sample.zst)
vt_dump_golden(dump-sample.jsonl 0 dump --json reader-sample.zst)
vt_dump_golden(dump-sample-stacks.txt 0 dump --no-defs --stacks reader-sample.zst)
vt_dump_golden(dump-sample-stacks.jsonl 0 dump --json --no-defs --stacks reader-sample.zst)
vt_dump_golden(dump-writer.txt 0 dump --stacks reader-writer.zst)
vt_dump_golden(dump-writer.jsonl 0 dump --json reader-writer.zst)
vt_dump_golden(dump-truncated.txt 1 dump reader-sample-truncated.zst)
vt_dump_golden(dump-damaged.txt 1 dump reader-sample-damaged.zst)

add_test(NAME cli.dump.errors
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dump_errors.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA})
set_tests_properties(cli.dump.errors PROPERTIES LABELS "cli")

# A FIFO, a directory and a dangling link named *.zst in a trace directory.
add_test(NAME cli.tracedir
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tracedir.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA})
set_tests_properties(cli.tracedir PROPERTIES LABELS "cli")

# Real traces recorded on the GPU machine (tests/data/gpu-*.zst, committed by
# the inject tests), when present: dump must read them exactly as before.
if(EXISTS ${VT_TEST_DATA}/gpu-alloc-vmm.zst)
  vt_dump_golden(dump-gpu-alloc-vmm.txt 0 dump --stacks gpu-alloc-vmm.zst)
  vt_dump_golden(dump-gpu-alloc-vmm.jsonl 0 dump --json --stacks gpu-alloc-vmm.zst)
endif()
if(EXISTS ${VT_TEST_DATA}/gpu-crash-kill.zst)
  vt_dump_golden(dump-gpu-crash-kill.txt 1 dump --no-defs gpu-crash-kill.zst)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/record.cmake)

# The man page names every command and option that --help does.
add_test(NAME cli.man COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/man_check.sh $<TARGET_FILE:vramtrace>
                                   ${CMAKE_SOURCE_DIR}/docs/man/vramtrace.1)
set_tests_properties(cli.man PROPERTIES LABELS "cli")

# torch.profiler and vramtrace sharing CUPTI on the H200 (vt_actmux.h): the
# kernels while and after it profiled, on vramtrace's clock
if(EXISTS ${VT_TEST_DATA}/gpu-profiler-shared.zst)
  add_test(NAME cli.profiler_shared
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/gpu/check_profiler_trace.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}/gpu-profiler-shared.zst)
  set_tests_properties(cli.profiler_shared PROPERTIES FAIL_REGULAR_EXPRESSION "FAIL")
endif()

# vramtrace top (builtin-top.c, src/analyze/vt_live.c): one screen of the
# fixtures (--once, plain 80x24 or COLUMNS x LINES, goldens), and the view
# following a trace that the core writer is still writing (top_live.c).
function(vt_top_golden name size)
  add_test(NAME cli.top.${name}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_CURRENT_LIST_DIR}/golden/${name} 0 top --once ${ARGN})
  string(REPLACE "x" ";" wh ${size})
  list(GET wh 0 cols)
  list(GET wh 1 rows)
  set_tests_properties(cli.top.${name} PROPERTIES LABELS "cli;golden" ENVIRONMENT "COLUMNS=${cols};LINES=${rows}")
endfunction()
vt_top_golden(top-graph-list.txt 80x24 seeds/graph_list-default)
vt_top_golden(top-graph-list-wide.txt 132x40 --sort live seeds/graph_list-default)
vt_top_golden(top-sample-truncated.txt 80x24 reader-sample-truncated.zst)
vt_top_golden(top-sample-damaged.txt 80x24 reader-sample-damaged.zst)
if(EXISTS ${VT_TEST_DATA}/gpu-oom.zst)
  vt_top_golden(top-gpu-oom.txt 80x24 gpu-oom.zst)
endif()
# one failed tensor request and the caching allocator's two retries of it:
# counted as the report counts them, "1 (+2 retries)"
vt_top_golden(top-torch-tracker.txt 132x30 gpu-torch-tracker-default.zst)
add_executable(vt_top_live ${CMAKE_CURRENT_LIST_DIR}/top_live.c)
target_include_directories(vt_top_live PRIVATE ${PROJECT_SOURCE_DIR}/tests/analyze)
target_link_libraries(vt_top_live PRIVATE vt_analyze vt_core)
add_test(NAME cli.top.live COMMAND vt_top_live $<TARGET_FILE:vramtrace> ${CMAKE_CURRENT_BINARY_DIR}/top-live)
set_tests_properties(cli.top.live PROPERTIES LABELS "cli" TIMEOUT 120)
# on a terminal (tmux), and record --live with and without one
add_test(NAME cli.top.tty
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/top_tty.sh $<TARGET_FILE:vramtrace> $<TARGET_FILE:record_child>
          ${VT_TEST_DATA} ${CMAKE_CURRENT_BINARY_DIR}/top-tty)
set_tests_properties(cli.top.tty PROPERTIES LABELS "cli;notsan" TIMEOUT 120)
