# Included by the top-level CMakeLists.txt when TALLY_FUZZ is ON, before the
# libraries are defined: instrument them for libFuzzer, ASan and UBSan.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TALLY_FUZZ needs clang++ (-DCMAKE_CXX_COMPILER=clang++)")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                    -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
