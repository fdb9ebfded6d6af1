# tests/analyze: the analyzer (src/analyze) and `vramtrace report` / `diff`.
# gen_traces writes the synthetic traces (core writer) into the build dir;
# golden.sh compares reports with tests/analyze/golden/ (refresh with
# scripts/update-golden.sh).
add_executable(vt_gen_traces ${CMAKE_CURRENT_LIST_DIR}/gen_traces.c)
target_include_directories(vt_gen_traces PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_gen_traces PRIVATE vt_core)

# symbols that travel: vramtrace symbolize and the report elsewhere
add_executable(vt_gen_symtrace ${CMAKE_CURRENT_LIST_DIR}/gen_symtrace.c)
target_include_directories(vt_gen_symtrace PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_gen_symtrace PRIVATE vt_core)
add_test(NAME analyze.symbols COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/symbols.sh $<TARGET_FILE:vramtrace>
         $<TARGET_FILE:vt_gen_symtrace> $<TARGET_FILE:vt_test_dlmod>)
set_tests_properties(analyze.symbols PROPERTIES LABELS "analyze")
# the build-id symbol cache: cold, warm (the module gone), damaged, two
# writers at once, off; on real shared objects of this machine
add_executable(vt_gen_symcache ${CMAKE_CURRENT_LIST_DIR}/gen_symcache.c)
target_include_directories(vt_gen_symcache PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_gen_symcache PRIVATE vt_core)
add_test(NAME analyze.symcache COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/symcache.sh $<TARGET_FILE:vramtrace>
         $<TARGET_FILE:vt_gen_symcache> $<TARGET_FILE:vt_test_dlmod>)
set_tests_properties(analyze.symcache PROPERTIES LABELS "analyze" TIMEOUT 300)
add_executable(test_symcache ${CMAKE_CURRENT_LIST_DIR}/test_symcache.c)
target_link_libraries(test_symcache PRIVATE vt_analyze vt_core)
add_test(NAME analyze.symcache.files COMMAND test_symcache)
set_tests_properties(analyze.symcache.files PROPERTIES LABELS "analyze")
# the sorted symbol table gives libdwfl's names (vt_symtab.c): the test's
# own libraries, the dlmod, and the large CUDA ones where installed
pkg_check_modules(VT_TEST_LIBDW REQUIRED IMPORTED_TARGET libdw)
add_executable(test_symtab ${CMAKE_CURRENT_LIST_DIR}/test_symtab.c)
target_link_libraries(test_symtab PRIVATE vt_analyze vt_core PkgConfig::VT_TEST_LIBDW stdc++)
add_test(NAME analyze.symtab COMMAND sh -c "exec $<TARGET_FILE:test_symtab> $<TARGET_FILE:vt_test_dlmod> \
         $(ls /usr/local/cuda/lib*/libnccl.so.2 /usr/local/cuda/lib*/libcublasLt.so.* 2>/dev/null | head -2)")
set_tests_properties(analyze.symtab PROPERTIES LABELS "analyze" TIMEOUT 300
                     ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/libdw.supp")

# who holds it: the holder walk (src/python) on stand-ins, and its file
# joined to a trace's blocks by the report
add_test(NAME analyze.holders.walk COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/test_holders.py ${CMAKE_SOURCE_DIR}/src/python)
add_test(NAME analyze.holders.report COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/holders.sh $<TARGET_FILE:vramtrace>
         $<TARGET_FILE:vt_gen_traces>)
set_tests_properties(analyze.holders.walk analyze.holders.report PROPERTIES LABELS "analyze")

set(VT_ANALYZE_TRACES ${CMAKE_BINARY_DIR}/tests/analyze-traces)
add_test(NAME analyze.gen COMMAND vt_gen_traces ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.gen PROPERTIES FIXTURES_SETUP analyze_traces LABELS "analyze")

# Golden reports: NAME EXPECTED_RC ARGS... (run inside the traces directory)
function(vt_analyze_golden name rc)
  add_test(NAME analyze.golden.${name}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES}
            ${CMAKE_CURRENT_LIST_DIR}/golden/${name} ${rc} ${ARGN})
  set_tests_properties(analyze.golden.${name} PROPERTIES FIXTURES_REQUIRED analyze_traces
                       LABELS "analyze;analyze-golden")
endfunction()
foreach(t leak growth_nvtx growth_kernels growth_late oom oom_retry vmm caching caching_tensors oddities pytest)
  vt_analyze_golden(report_${t}.txt 0 report ${t}.zst)
  vt_analyze_golden(report_${t}.json 0 report --json ${t}.zst)
endforeach()
# OOM first (issue 33): the headline, one failure per request, probes apart
add_test(NAME analyze.oom COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/oom.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES}
                                   ${VT_TEST_DATA})
set_tests_properties(analyze.oom PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
# A record that arrives after later events (a module's globals from an
# activity record) still counts at the peak it was live at.
add_test(NAME analyze.late_static COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/late_static.sh $<TARGET_FILE:vramtrace>
         ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.late_static PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
# Pools above CUDA (issue 33): CuPy's pool and XLA's BFC give cannot tell
# with the setting that shows their blocks; CuPy's hook and XLA's platform
# allocator name the leak's line.
add_test(NAME analyze.pools COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pools.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.pools PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
# A trace damaged in many frames is read to its end.
add_test(NAME analyze.damaged COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/damaged.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.damaged PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
vt_analyze_golden(report_ranks.txt 0 report ranks)
vt_analyze_golden(report_ranks.json 0 report --json ranks)
# A job of two ranks (issue 39): one rank leaks, one runs out of memory;
# the merged verdict names the rank, its line and holder, the clean one
foreach(j job_leak job_oom)
  vt_analyze_golden(report_${j}.txt 0 report ${j})
  vt_analyze_golden(report_${j}.json 0 report --json ${j})
endforeach()
add_test(NAME analyze.job COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/job.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES})
set_tests_properties(analyze.job PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
# The checker of the two-GPU run (tests/gpu/check_dist.py) on those
# synthetic jobs, and on the real recordings once they are fixtures
# (tests/data/ddp, tests/data/fsdp: skipped until then)
add_test(NAME analyze.dist.synthetic COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/gpu/check_dist.py $<TARGET_FILE:vramtrace>
                                             ${VT_ANALYZE_TRACES}/job_leak ${VT_ANALYZE_TRACES}/job_oom)
set_tests_properties(analyze.dist.synthetic PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")
add_test(NAME analyze.dist.fixtures COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/gpu/check_dist.py $<TARGET_FILE:vramtrace>
                                            ${VT_TEST_DATA}/ddp ${VT_TEST_DATA}/fsdp)
set_tests_properties(analyze.dist.fixtures PROPERTIES LABELS "analyze" SKIP_RETURN_CODE 77)
vt_analyze_golden(report_leak_at_end.txt 0 report --at end leak.zst)
vt_analyze_golden(report_leak_at_time.txt 0 report --at 30ms leak.zst)
vt_analyze_golden(report_growth_at_marker.txt 0 report --at step --top 2 growth_nvtx.zst)
vt_analyze_golden(report_leak_fail.txt 3 report --fail-on-leak 50M leak.zst)
vt_analyze_golden(diff_leak.txt 0 diff leak.zst leak2.zst)
vt_analyze_golden(diff_leak.json 0 diff --json leak.zst leak2.zst)

# Real traces of tests/analyze/gpu/leaky_train.py recorded on the H200 with
# `vramtrace record` (tests/analyze/gpu-analyze.sh) in PyTorch's three
# allocator modes: default caching allocator, expandable segments, and
# --tensors (backend:cudaMallocAsync).
foreach(m default expandable tensors)
  add_test(NAME analyze.golden.gpu-leaky-${m}.txt
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_CURRENT_LIST_DIR}/golden/gpu-leaky-${m}.txt 0 report --no-symbols --top 8 --frames 40 gpu-leaky-${m}.zst)
  add_test(NAME analyze.golden.gpu-leaky-${m}.json
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
            ${CMAKE_CURRENT_LIST_DIR}/golden/gpu-leaky-${m}.json 0 report --no-symbols --top 8 --json gpu-leaky-${m}.zst)
  set_tests_properties(analyze.golden.gpu-leaky-${m}.txt analyze.golden.gpu-leaky-${m}.json
                       PROPERTIES LABELS "analyze;analyze-golden")
endforeach()
# The verdicts on those real traces, independent of the golden text.
# PyTorch's default and expandable allocators with tensor events (issue 23,
# tests/gpu/check_torch_tracker.sh recorded them): allocated and reserved
# at each NVTX mark against torch.cuda's own numbers, every tensor paired,
# the logger leak on its own line
foreach(m default expandable)
  add_test(NAME analyze.torch-tracker.${m}
           COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/gpu/check_torch_tracker.py $<TARGET_FILE:vramtrace>
                   ${VT_TEST_DATA}/gpu-torch-tracker-${m}.zst ${VT_TEST_DATA}/gpu-torch-tracker-${m}.json)
  set_tests_properties(analyze.torch-tracker.${m} PROPERTIES LABELS "analyze")
endforeach()
add_test(NAME analyze.gpu-verdicts COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu-verdicts.sh $<TARGET_FILE:vramtrace>
                                           ${VT_TEST_DATA})
set_tests_properties(analyze.gpu-verdicts PROPERTIES LABELS "analyze")

# Real traces recorded on the GPU machine by the injection tests
# (tests/data/gpu-*.zst): a golden report for each (a new fixture fails
# until scripts/update-golden.sh has written its golden files).  A trace
# cut by SIGKILL is reported, then the read error exits 1.
set(VT_GPU_FIXTURE_RC_gpu-crash-kill 1)
file(GLOB VT_GPU_FIXTURES ${VT_TEST_DATA}/gpu-*.zst)
list(FILTER VT_GPU_FIXTURES EXCLUDE REGEX "gpu-leaky-") # their goldens above
foreach(f ${VT_GPU_FIXTURES})
  get_filename_component(n ${f} NAME_WE)
  set(rc 0)
  if(DEFINED VT_GPU_FIXTURE_RC_${n})
    set(rc ${VT_GPU_FIXTURE_RC_${n}})
  endif()
  foreach(fmt txt json)
    if(TRUE)
      set(extra "")
      if(fmt STREQUAL "json")
        set(extra "--json")
      endif()
      add_test(NAME analyze.golden.${n}.${fmt}
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}
                ${CMAKE_CURRENT_LIST_DIR}/golden/${n}.${fmt} ${rc} report --no-symbols --top 5 ${extra} ${n}.zst)
      set_tests_properties(analyze.golden.${n}.${fmt} PROPERTIES LABELS "analyze;analyze-golden")
    endif()
  endforeach()
endforeach()

add_test(NAME analyze.cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli.sh $<TARGET_FILE:vramtrace> ${VT_ANALYZE_TRACES}
                                   ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus)
set_tests_properties(analyze.cli PROPERTIES FIXTURES_REQUIRED analyze_traces LABELS "analyze")

# The page's packed data read back as the page reads it: the report itself,
# and a job page of every fixture within 50 KB a process.
add_test(NAME analyze.page_data
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/page_data.py $<TARGET_FILE:vramtrace> ${VT_TEST_DATA})
set_tests_properties(analyze.page_data PROPERTIES LABELS "analyze")

find_package(ZLIB REQUIRED) # its imported target is seen only in the directory that finds it
add_executable(test_analyze ${CMAKE_CURRENT_LIST_DIR}/test_analyze.c ${CMAKE_CURRENT_LIST_DIR}/cxx_frame.cc)
target_link_libraries(test_analyze PRIVATE vt_analyze vt_core vt_cmocka ZLIB::ZLIB ${CMAKE_DL_LIBS})
set_target_properties(test_analyze PROPERTIES LINKER_LANGUAGE CXX)
target_compile_options(test_analyze PRIVATE -g)
add_test(NAME analyze.unit COMMAND test_analyze)
set_tests_properties(analyze.unit PROPERTIES LABELS "analyze")

# The replay's consumer interface on the real traces (test_consumer.c).
add_executable(test_consumer ${CMAKE_CURRENT_LIST_DIR}/test_consumer.c)
target_link_libraries(test_consumer PRIVATE vt_analyze vt_core)
file(GLOB VT_CONSUMER_TRACES ${VT_TEST_DATA}/gpu-*.zst)
add_test(NAME analyze.consumer COMMAND test_consumer ${VT_CONSUMER_TRACES})
set_tests_properties(analyze.consumer PROPERTIES LABELS "analyze")
include(${CMAKE_CURRENT_LIST_DIR}/export/tests.cmake)
# The memory patterns users meet (issues 22 and 25), recorded on the H200
# by tests/gpu/check_seeds.sh in PyTorch's three allocator modes and a
# native program (tests/data/seeds/): the verdict, the named line, the
# holder and its bytes against torch.cuda's own numbers, the native leaks
# by function name; and the report a user reads first for two of them.
add_test(NAME analyze.seeds
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/gpu/check_seeds.py $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}/seeds)
set_tests_properties(analyze.seeds PROPERTIES LABELS "analyze")
# the same traces with the view early in the loop: never "no leak" to a
# leak (tests/analyze/seeds_at.py)
add_test(NAME analyze.seeds_at
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/seeds_at.py $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}/seeds)
set_tests_properties(analyze.seeds_at PROPERTIES LABELS "analyze")
foreach(s logger-default graph_list-expandable deque-async native)
  add_test(NAME analyze.golden.seeds-${s}.txt
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/golden.sh $<TARGET_FILE:vramtrace> ${VT_TEST_DATA}/seeds/${s}
            ${CMAKE_CURRENT_LIST_DIR}/golden/seeds-${s}.txt 0 report --top 4 .)
  set_tests_properties(analyze.golden.seeds-${s}.txt PROPERTIES LABELS "analyze;analyze-golden")
endforeach()
# The ground-truth matrix's recordings (tests/data/matrix, recorded on the
# H200 by tests/gpu/check_matrix.sh): each cell's verdict against what
# torch.cuda.memory_allocated() said, the leak's line, no false leak.
add_test(NAME analyze.matrix.replay
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/gpu/matrix/run.py --replay ${VT_TEST_DATA}/matrix
                 --vt $<TARGET_FILE:vramtrace> --out ${CMAKE_CURRENT_BINARY_DIR}/matrix-replay)
set_tests_properties(analyze.matrix.replay PROPERTIES LABELS "analyze")

# The Parquet export (docs/EXPORT.md, "Parquet"), read back by DuckDB and
# hyparquet (viewer/node_modules, scripts/install-deps.sh) against
# `report --json`: every fixture directory, the SQL examples, a job of
# 50 generated traces exported one at a time (gen_job.c), and the writer's
# edge cases (parquet/test_parquet.c: nulls, lists, invalid UTF-8, row
# groups, statistics) against the rows they must read.
add_executable(vt_gen_job ${CMAKE_CURRENT_LIST_DIR}/gen_job.c)
target_include_directories(vt_gen_job PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vt_gen_job PRIVATE vt_core)
add_executable(test_parquet ${CMAKE_CURRENT_LIST_DIR}/parquet/test_parquet.c)
target_include_directories(test_parquet PRIVATE ${PROJECT_SOURCE_DIR}/src/analyze)
target_link_libraries(test_parquet PRIVATE vt_analyze vt_core)
find_program(VT_NODE_PQ node)
if(VT_NODE_PQ AND EXISTS ${PROJECT_SOURCE_DIR}/viewer/node_modules/@duckdb/node-api)
  set(VT_PQ_CHECK ${VT_NODE_PQ} ${PROJECT_SOURCE_DIR}/viewer/parquet_check.mjs $<TARGET_FILE:vramtrace>)
  set(VT_PQ_OUT ${CMAKE_BINARY_DIR}/tests/parquet)
  file(GLOB VT_PQ_GPU ${VT_TEST_DATA}/gpu-*.zst)
  add_test(NAME analyze.parquet.edge COMMAND bash -c "mkdir -p \"$1\" && \"$0\" \"$1\" && \"$2\" \"$3\" \"$1\""
           $<TARGET_FILE:test_parquet> ${VT_PQ_OUT}/edge ${VT_NODE_PQ} ${PROJECT_SOURCE_DIR}/viewer/parquet_edge.mjs)
  add_test(NAME analyze.parquet.seeds COMMAND ${VT_PQ_CHECK} ${VT_PQ_OUT}/seeds --examples ${VT_TEST_DATA}/seeds)
  add_test(NAME analyze.parquet.gpu COMMAND ${VT_PQ_CHECK} ${VT_PQ_OUT}/gpu --examples ${VT_PQ_GPU})
  add_test(NAME analyze.parquet.matrix COMMAND ${VT_PQ_CHECK} ${VT_PQ_OUT}/matrix --examples ${VT_TEST_DATA}/matrix)
  add_test(NAME analyze.parquet.job COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/parquet_job.sh $<TARGET_FILE:vramtrace>
           $<TARGET_FILE:vt_gen_job> ${VT_NODE_PQ} ${PROJECT_SOURCE_DIR}/viewer ${VT_PQ_OUT}/job 50)
  set_tests_properties(analyze.parquet.edge analyze.parquet.seeds analyze.parquet.gpu analyze.parquet.matrix analyze.parquet.job
                       PROPERTIES LABELS "analyze;parquet")
endif()
# The pytest plugin's recording on the GPU (tests/gpu/check_pytest.sh), once
# it is a fixture: the report's tests section names the leaking test's line.
if(EXISTS ${VT_TEST_DATA}/pytest)
  add_test(NAME analyze.pytest_fixture
           COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/gpu/check_pytest_report.py --run $<TARGET_FILE:vramtrace>
                   ${VT_TEST_DATA}/pytest ${PROJECT_SOURCE_DIR}/tests/gpu/pytest_leak.py)
  set_tests_properties(analyze.pytest_fixture PROPERTIES LABELS "analyze")
endif()
# Hostile traces (issue 36): names with control bytes, markup, invalid
# UTF-8 and NUL; times far from the start and running backwards; ranges
# overlapping in part; an impossible device; traces cut short; outputs
# with links planted at their paths; the analysis budget.  One test per
# finding (tests/analyze/hostile.sh CASE).
add_executable(gen_hostile ${CMAKE_CURRENT_LIST_DIR}/gen_hostile.c)
target_link_libraries(gen_hostile PRIVATE vt_reader_testlib)
foreach(c dump_time escape html utf8 nul unverified outputs time overlap budget bad_device messages)
  add_test(NAME analyze.hostile.${c}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/hostile.sh ${c} $<TARGET_FILE:gen_hostile> $<TARGET_FILE:vramtrace>)
  set_tests_properties(analyze.hostile.${c} PROPERTIES LABELS "analyze;hostile")
endforeach()
