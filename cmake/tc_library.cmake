# tc::tc: the one library a training program links. A shared library that
# holds the compiler, the recording layer, the store and the in-process
# collector (TC_PROFILE=path starts it before main()). Its public headers are
# the compiler's (<tc/tc.h>) and the recording API (<tc/trace/trace.h>).
add_library(tc SHARED cmake/tc_library.cpp $<TARGET_OBJECTS:tc_collect_autostart>)
add_library(tc::tc ALIAS tc)
set_target_properties(tc PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} OUTPUT_NAME tc)
# Whole archives, so that every public symbol is in the library. (CMake's
# WHOLE_ARCHIVE feature refuses archives that also appear as dependencies of
# one another, so the flags are spelled out.)
set(tc_parts tc_compiler tc_collect tc_import tc_store tc_trace)
add_dependencies(tc ${tc_parts} tc_collect_autostart)
set(tc_whole "-Wl,--whole-archive")
foreach(part ${tc_parts})
  list(APPEND tc_whole $<TARGET_FILE:${part}>)
endforeach()
list(APPEND tc_whole "-Wl,--no-whole-archive")
find_package(simdjson CONFIG REQUIRED)  # tc_import's JSON
target_link_libraries(tc PRIVATE ${tc_whole} SQLite::SQLite3 simdjson::simdjson ${TC_BLAS_LIBRARY} Threads::Threads ${CMAKE_DL_LIBS})
if(TC_HAVE_CUDA)
  target_link_libraries(tc PRIVATE CUDA::cudart)
endif()
target_include_directories(tc PRIVATE ${PROJECT_SOURCE_DIR}/profiler/collect/include ${PROJECT_SOURCE_DIR}/profiler/store/include)
target_include_directories(tc INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/compiler/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/profiler/trace/include>
  $<INSTALL_INTERFACE:include>)
target_compile_definitions(tc INTERFACE TC_TRACE_ENABLED=$<BOOL:${TC_TRACE}>)
target_compile_features(tc INTERFACE cxx_std_20)
target_link_libraries(tc INTERFACE Threads::Threads)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS tc EXPORT tcTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY compiler/include/tc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY profiler/trace/include/tc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tcTargets NAMESPACE tc:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tc)
configure_package_config_file(cmake/tcConfig.cmake.in ${CMAKE_BINARY_DIR}/tcConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tc)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tcConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tcConfig.cmake ${CMAKE_BINARY_DIR}/tcConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tc)
