# vt_pystack: GIL-free Python stack capture (CPython 3.10-3.13), linked
# into libvramtrace.so by the inject part.  No CUDA, no Python headers.
add_library(vt_pystack STATIC ${CMAKE_CURRENT_SOURCE_DIR}/vt_pystack.c ${CMAKE_CURRENT_SOURCE_DIR}/vt_pystack_layout.c
                              ${CMAKE_CURRENT_SOURCE_DIR}/vt_pystack_merge.c)
target_include_directories(vt_pystack PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
                                             ${PROJECT_SOURCE_DIR}/src/core)
set_target_properties(vt_pystack PROPERTIES POSITION_INDEPENDENT_CODE ON
                                            C_VISIBILITY_PRESET hidden)
target_link_libraries(vt_pystack PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(vt_pystack PRIVATE -O2)  # hot path: keep it optimised in any build type
