# Every dependency comes from the distribution (tools/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
# zlib reads gzip-compressed IDX files (MNIST, Fashion-MNIST); libpng needs it too.
find_package(ZLIB REQUIRED)
# Debian ships toml++ as a shared library with a CMake config. Where it is absent (the GPU machine),
# KILN_TOMLPP_INCLUDE_DIR may name a folder holding its headers, used header-only.
find_package(tomlplusplus 3 QUIET)
if(NOT tomlplusplus_FOUND)
  set(KILN_TOMLPP_INCLUDE_DIR "" CACHE PATH "Folder containing toml++/toml.h, when no toml++ package is installed")
  if(NOT EXISTS "${KILN_TOMLPP_INCLUDE_DIR}/toml++/toml.h")
    message(FATAL_ERROR "toml++ not found: install libtomlplusplus-dev (tools/install-deps.sh) or set KILN_TOMLPP_INCLUDE_DIR")
  endif()
  add_library(tomlplusplus_header_only INTERFACE)
  target_include_directories(tomlplusplus_header_only SYSTEM INTERFACE ${KILN_TOMLPP_INCLUDE_DIR})
  target_compile_definitions(tomlplusplus_header_only INTERFACE TOML_HEADER_ONLY=1)
  add_library(tomlplusplus::tomlplusplus ALIAS tomlplusplus_header_only)
endif()
# WebP (webdataset shards carry .webp images) through libwebp's pkg-config file. Optional so that kiln
# builds where it is absent (the GPU machine); CI installs it, and decoding a WebP file without it is
# a clear error.
find_package(PkgConfig REQUIRED)
pkg_check_modules(WebP QUIET IMPORTED_TARGET libwebp)

add_library(kiln_deps INTERFACE)
target_link_libraries(kiln_deps INTERFACE Threads::Threads nlohmann_json::nlohmann_json CLI11::CLI11
  JPEG::JPEG PNG::PNG ZLIB::ZLIB tomlplusplus::tomlplusplus)
if(WebP_FOUND)
  target_link_libraries(kiln_deps INTERFACE PkgConfig::WebP)
  target_compile_definitions(kiln_deps INTERFACE KILN_HAVE_WEBP=1)
endif()

# The oneDNN CPU backend is built when Debian's libdnnl-dev is there (its CMake config also needs the
# OpenCL headers); without it kiln still builds and the backend is absent from the registry.
find_package(dnnl CONFIG QUIET)
option(KILN_ONEDNN "Build the oneDNN CPU backend (needs libdnnl-dev)" ${dnnl_FOUND})
if(KILN_ONEDNN)
  if(NOT dnnl_FOUND)
    message(FATAL_ERROR "KILN_ONEDNN is ON but oneDNN was not found (apt-get install libdnnl-dev)")
  endif()
  # Debian's oneDNN threads through OpenMP; the backend sets the thread count through it.
  find_package(OpenMP REQUIRED COMPONENTS CXX)
endif()
