# tests/core: the format's writer and reader (src/core).
include(${CMAKE_CURRENT_LIST_DIR}/reader.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/writer.cmake)
