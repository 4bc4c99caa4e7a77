# One helper per kind of target, so that nothing is left out of the build by
# hand (STYLE.md, habit 11).

# tally_add_library(<name> SOURCES ... DEPS ...)
#   A layer library `tally_<name>`. Every layer sees the project root on its
#   include path, so includes read "fbf/bloom_filter.hpp".
function(tally_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(ARG_SOURCES)
    add_library(tally_${name} STATIC ${ARG_SOURCES})
    target_include_directories(tally_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(tally_${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(tally_${name} INTERFACE)
    target_include_directories(tally_${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(tally_${name} INTERFACE ${ARG_DEPS})
  endif()
  add_library(tally::${name} ALIAS tally_${name})
endfunction()

# tally_add_test(<suite> DEPS ...)
#   Every tests/<suite>/*.cpp file is compiled into one Boost.Test binary
#   `test_<suite>` registered with CTest. The files are globbed, so a new test
#   file cannot be forgotten; the module main is generated.
function(tally_add_test suite)
  cmake_parse_arguments(ARG "" "TIMEOUT" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/tests/${suite}/*.cpp)
  if(NOT sources)
    # An empty folder holds no test to leave out; say so and go on.
    message(WARNING "tally_add_test(${suite}): tests/${suite}/ has no .cpp yet")
    return()
  endif()
  set(main ${CMAKE_CURRENT_BINARY_DIR}/test_${suite}_main.cpp)
  file(CONFIGURE OUTPUT ${main} CONTENT
       "#define BOOST_TEST_MODULE ${suite}\n#include <boost/test/unit_test.hpp>\n")
  add_executable(test_${suite} ${main} ${sources})
  target_include_directories(test_${suite} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(test_${suite} PRIVATE ${ARG_DEPS}
                        Boost::unit_test_framework)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${suite}
           COMMAND test_${suite} --log_level=test_suite --report_level=short)
  set_tests_properties(${suite} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
endfunction()

# tally_add_bench(<name> SOURCES ... DEPS ...)
#   A benchmark binary. It knows whether it was built optimized, so it can warn
#   when its numbers mean nothing (STYLE.md, habit 10).
function(tally_add_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_compile_definitions(${name} PRIVATE
    TALLY_BUILD_TYPE="$<IF:$<CONFIG:>,none,$<CONFIG>>")
endfunction()

# tally_add_app(<name> SOURCES ... DEPS ...): a user-facing binary.
function(tally_add_app name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()
