# Finds Tally's Debian-packaged dependencies and exposes them as imported
# targets. Pinned versions (Debian 12): docs/DEPENDENCIES.md.
find_package(Threads REQUIRED)

# CAF 0.17.6 ships no CMake config and no pkg-config file (CAF-NOTES.md), so
# its headers and libraries are found by hand and wrapped here.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
find_library(CAF_OPENSSL_LIBRARY caf_openssl)
find_package(OpenSSL)
if(CAF_INCLUDE_DIR AND CAF_CORE_LIBRARY AND CAF_IO_LIBRARY AND CAF_OPENSSL_LIBRARY
   AND OPENSSL_FOUND)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION ${CAF_IO_LIBRARY}
    INTERFACE_LINK_LIBRARIES CAF::core)
  # TLS on node links (docs/SECURITY.md, "Node links"): CAF's OpenSSL module.
  add_library(CAF::openssl UNKNOWN IMPORTED)
  set_target_properties(CAF::openssl PROPERTIES
    IMPORTED_LOCATION ${CAF_OPENSSL_LIBRARY}
    INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL;OpenSSL::Crypto")
  set(TALLY_HAVE_CAF ON)
else()
  message(FATAL_ERROR "CAF or OpenSSL not found: run scripts/setup.sh (installs libcaf-dev, libssl-dev)")
endif()

find_path(LMDB_INCLUDE_DIR lmdb.h)
find_library(LMDB_LIBRARY lmdb)
if(NOT LMDB_INCLUDE_DIR OR NOT LMDB_LIBRARY)
  message(FATAL_ERROR "LMDB not found: run scripts/setup.sh (installs liblmdb-dev)")
endif()
add_library(LMDB::lmdb UNKNOWN IMPORTED)
set_target_properties(LMDB::lmdb PROPERTIES
  IMPORTED_LOCATION ${LMDB_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${LMDB_INCLUDE_DIR})

find_path(CEREAL_INCLUDE_DIR cereal/cereal.hpp)
if(NOT CEREAL_INCLUDE_DIR)
  message(FATAL_ERROR "Cereal not found: run scripts/setup.sh (installs libcereal-dev)")
endif()
add_library(cereal::cereal INTERFACE IMPORTED)
set_target_properties(cereal::cereal PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${CEREAL_INCLUDE_DIR})

# tallyd allocates a few small objects per request (decoded messages, actor
# messages, replies); jemalloc's per-thread caches measured 11-49% more
# throughput than glibc's malloc (docs/PERFORMANCE.md, "The request path").
# Redis links it for the same reason.
if(TALLY_JEMALLOC)
  find_library(JEMALLOC_LIBRARY NAMES jemalloc)
  if(NOT JEMALLOC_LIBRARY)
    message(FATAL_ERROR "jemalloc not found: run scripts/setup.sh (installs libjemalloc-dev), "
                        "or configure with -DTALLY_JEMALLOC=OFF")
  endif()
  add_library(jemalloc::jemalloc UNKNOWN IMPORTED)
  set_target_properties(jemalloc::jemalloc PROPERTIES IMPORTED_LOCATION ${JEMALLOC_LIBRARY})
endif()

if(TALLY_BUILD_TESTS)
  find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)
endif()
