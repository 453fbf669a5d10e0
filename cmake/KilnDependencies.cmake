# Every dependency comes from the distribution (tools/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
find_package(tomlplusplus 3 REQUIRED)  # Debian ships it as a shared library with a CMake config
# libwebp has no CMake config on Debian 12; its pkg-config file comes with libwebp-dev.
find_package(PkgConfig REQUIRED)
pkg_check_modules(WebP REQUIRED IMPORTED_TARGET libwebp)

add_library(kiln_deps INTERFACE)
target_link_libraries(kiln_deps INTERFACE Threads::Threads nlohmann_json::nlohmann_json CLI11::CLI11
  JPEG::JPEG PNG::PNG PkgConfig::WebP tomlplusplus::tomlplusplus)
