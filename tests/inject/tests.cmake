# tests/inject/tests.cmake - CPU tests of the injection library's pure parts.
add_executable(test_inject_config ${CMAKE_CURRENT_LIST_DIR}/test_config.c)
target_link_libraries(test_inject_config PRIVATE vt_inject_common vt_cmocka)
add_test(NAME inject.config COMMAND test_inject_config)


add_library(vt_test_dlmod SHARED ${CMAKE_CURRENT_LIST_DIR}/dlmod.c)
target_link_options(vt_test_dlmod PRIVATE -Wl,--build-id=sha1)

# The unwinder against glibc backtrace(), with the call chain compiled with
# and without frame pointers.
foreach(variant fp nofp)
  if(variant STREQUAL "fp")
    set(_flags -O2 -fno-omit-frame-pointer)
  else()
    set(_flags -O2 -fomit-frame-pointer)
  endif()
  add_library(vt_test_chain_${variant} STATIC ${CMAKE_CURRENT_LIST_DIR}/unwind_chain.c)
  target_include_directories(vt_test_chain_${variant} PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(vt_test_chain_${variant} PUBLIC vt_inject_common)
  target_compile_options(vt_test_chain_${variant} PRIVATE ${_flags} -fno-optimize-sibling-calls)
  add_executable(test_inject_unwind_${variant} ${CMAKE_CURRENT_LIST_DIR}/test_unwind.c)
  target_link_libraries(test_inject_unwind_${variant} PRIVATE vt_test_chain_${variant} vt_inject_common vt_cmocka ${CMAKE_DL_LIBS} Threads::Threads)
  target_link_options(test_inject_unwind_${variant} PRIVATE -rdynamic -Wl,--build-id=sha1)
  target_compile_definitions(test_inject_unwind_${variant} PRIVATE DLMOD_PATH="$<TARGET_FILE:vt_test_dlmod>"
                             CHAIN_FP=$<STREQUAL:${variant},fp>)
  add_dependencies(test_inject_unwind_${variant} vt_test_dlmod)
  add_test(NAME inject.unwind.${variant} COMMAND test_inject_unwind_${variant})
endforeach()

if(TARGET vramtrace_inject)
  add_test(NAME inject.exports COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_exports.sh
           $<TARGET_FILE:vramtrace_loader> $<TARGET_FILE:vramtrace_inject>)
  # nosan: loads the library into a Python interpreter
  add_test(NAME inject.loader COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/loader_test.sh $<TARGET_FILE:vramtrace_loader>)
  set_tests_properties(inject.loader PROPERTIES LABELS nosan)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/python.cmake)

# the PyTorch tracker's layout check and module test (vt_torch_logic.h)
add_executable(test_inject_torch_logic ${CMAKE_CURRENT_LIST_DIR}/test_torch_logic.c)
target_include_directories(test_inject_torch_logic PRIVATE ${CMAKE_SOURCE_DIR}/src/inject)
target_link_libraries(test_inject_torch_logic PRIVATE vt_cmocka Threads::Threads)
add_test(NAME inject.torch_logic COMMAND test_inject_torch_logic)

# GOT slots of other objects set to a replacement (vt_got.h): a callee and
# callers built read-only after loading (-z relro -z now), lazily bound,
# and taking the function's address (a GLOB_DAT slot)
add_library(vt_got_callee SHARED ${CMAKE_CURRENT_LIST_DIR}/got_callee.c)
foreach(v now lazy addr)
  add_library(vt_got_caller_${v} SHARED ${CMAKE_CURRENT_LIST_DIR}/got_caller.c)
  target_compile_definitions(vt_got_caller_${v} PRIVATE GOT_CALLER_NAME=vt_got_call_${v})
  target_link_libraries(vt_got_caller_${v} PRIVATE vt_got_callee)
endforeach()
target_link_options(vt_got_caller_now PRIVATE -Wl,-z,relro,-z,now)
target_link_options(vt_got_caller_lazy PRIVATE -Wl,-z,lazy,-z,norelro)
target_compile_definitions(vt_got_caller_addr PRIVATE GOT_CALLER_ADDR)
target_link_options(vt_got_caller_addr PRIVATE -Wl,-z,relro,-z,now)
add_executable(test_inject_got ${CMAKE_CURRENT_LIST_DIR}/test_got.c)
target_link_libraries(test_inject_got PRIVATE vt_inject_common vt_got_caller_now vt_got_caller_lazy vt_got_caller_addr
                      vt_got_callee vt_cmocka ${CMAKE_DL_LIBS})
add_test(NAME inject.got COMMAND test_inject_got)

# CUPTI's activity API shared with a second client (vt_actmux.h)
add_executable(test_inject_actmux ${CMAKE_CURRENT_LIST_DIR}/test_actmux.c)
target_link_libraries(test_inject_actmux PRIVATE vt_inject_common vt_cmocka Threads::Threads)
add_test(NAME inject.actmux COMMAND test_inject_actmux)

# CuPy's memory hook (src/python/vramtrace_cupy.py) on a fake cupy, calling
# a fake library with the real entry points' signatures (fake_hook_lib.c)
add_library(vt_fake_hook SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_hook_lib.c)
add_test(NAME inject.cupy_hook COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/test_cupy_hook.py ${CMAKE_SOURCE_DIR}/src/python
                                       $<TARGET_FILE:vt_fake_hook>)
# nosan: loads the fake library into a Python that sanitizers did not start
set_tests_properties(inject.cupy_hook PROPERTIES LABELS "inject;nosan")

# The table of blocks allocated since a mark (src/inject/vt_marktab.c), what
# vt_test_end() reports to the pytest plugin
add_executable(test_inject_marktab ${CMAKE_CURRENT_LIST_DIR}/test_marktab.c)
target_link_libraries(test_inject_marktab PRIVATE vt_inject_common vt_cmocka Threads::Threads)
add_test(NAME inject.marktab COMMAND test_inject_marktab)
set_tests_properties(inject.marktab PROPERTIES LABELS "inject")

# The pytest plugin (src/python/vramtrace_pytest.py): its hooks on stand-in
# objects, then real pytest runs (where an interpreter has pytest) on a
# stand-in torch calling a fake library over the real table (fake_test_lib.c)
add_library(vt_fake_test SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_test_lib.c ${PROJECT_SOURCE_DIR}/src/inject/vt_marktab.c)
target_include_directories(vt_fake_test PRIVATE ${PROJECT_SOURCE_DIR}/src/inject ${PROJECT_SOURCE_DIR}/src/core)
target_link_libraries(vt_fake_test PRIVATE Threads::Threads)
add_test(NAME inject.pytest_plugin COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/test_pytest_plugin.py ${CMAKE_SOURCE_DIR}/src/python
                                           $<TARGET_FILE:vt_fake_test>)
set_tests_properties(inject.pytest_plugin PROPERTIES LABELS "inject;nosan")
