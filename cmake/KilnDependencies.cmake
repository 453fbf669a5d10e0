# Every dependency comes from the distribution (tools/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
find_package(tomlplusplus 3 REQUIRED)  # Debian ships it as a shared library with a CMake config

add_library(kiln_deps INTERFACE)
target_link_libraries(kiln_deps INTERFACE Threads::Threads nlohmann_json::nlohmann_json CLI11::CLI11
  JPEG::JPEG PNG::PNG tomlplusplus::tomlplusplus)

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
