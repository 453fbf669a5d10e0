# `cmake --install`: the kiln program, libkiln.so with its headers, a CMake package (find_package(kiln
# CONFIG) -> kiln::kiln), kiln.pc for pkg-config, the family manifests (found by the installed kiln in
# <prefix>/share/kiln/families, src/manifest/manifest_location.h) and the Python module.
# `cpack -G DEB` packages the same tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
  "Where the Python package kiln is installed, below the prefix (Debian's layout)")

# Where the binaries find each other: libkiln_core.so, libkiln_waits.so, libkiln.so and the plugins share one
# folder (the build folder's lib/, the prefix's LIBDIR, the wheel's package folder), which the kiln program
# and the Python module find relative to themselves. Only the CUDA plugin names the CUDA toolkit's and
# cuDNN's folders, where the build found them. The run paths are set at link time, so installing rewrites
# nothing.
set(kiln_libraries kiln_lib kiln_shared kiln_waits)
set_target_properties(${kiln_libraries} PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "\$ORIGIN")
set_target_properties(kiln PROPERTIES BUILD_WITH_INSTALL_RPATH ON
  INSTALL_RPATH "\$ORIGIN/lib;\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
if(TARGET kiln_cuda)
  get_filename_component(kiln_cudnn_dir ${KILN_CUDNN_LIBRARY} DIRECTORY)
  set(kiln_cuda_dirs ${CUDAToolkit_LIBRARY_DIR} ${kiln_cudnn_dir})
  list(REMOVE_DUPLICATES kiln_cuda_dirs)
  set_target_properties(kiln_cuda PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "\$ORIGIN;${kiln_cuda_dirs}")
endif()
if(TARGET kiln_python)
  # Beside it in a wheel; from build/python/kiln to build/lib; from the installed package to LIBDIR.
  if(IS_ABSOLUTE ${KILN_PYTHON_INSTALL_DIR})
    set(kiln_python_to_libdir ${CMAKE_INSTALL_FULL_LIBDIR})
  else()
    file(RELATIVE_PATH kiln_python_to_libdir /prefix/${KILN_PYTHON_INSTALL_DIR}/kiln /prefix/${CMAKE_INSTALL_LIBDIR})
    set(kiln_python_to_libdir "\$ORIGIN/${kiln_python_to_libdir}")
  endif()
  set_target_properties(kiln_python PROPERTIES BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "\$ORIGIN;\$ORIGIN/../../lib;${kiln_python_to_libdir}")
endif()

# Three packages: kiln (the program, the libraries without CUDA, the manifests, the Python module), kiln-cuda
# (the cuda backend's plugin) and kiln-dev (headers, CMake package, pkg-config): the install components.
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME runtime)
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_waits EXPORT kilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT dev)
install(TARGETS kiln_lib LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
if(TARGET kiln_cuda)
  install(TARGETS kiln_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT cuda NAMELINK_SKIP)
endif()
install(TARGETS kiln_shared EXPORT kilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/kiln/kiln.h include/kiln/kiln.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln COMPONENT dev)

set(kiln_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${kiln_cmake_dir} COMPONENT dev)
configure_package_config_file(cmake/templates/kilnConfig.cmake.in ${CMAKE_BINARY_DIR}/generated/kilnConfig.cmake
  INSTALL_DESTINATION ${kiln_cmake_dir})
# Before 1.0 a minor release may change the ABI (the SONAME carries major.minor).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/kilnConfig.cmake ${CMAKE_BINARY_DIR}/generated/kilnConfigVersion.cmake
  DESTINATION ${kiln_cmake_dir} COMPONENT dev)

# Relocatable: the prefix is found from the .pc file's own folder (<prefix>/LIBDIR/pkgconfig).
set(kiln_pc_prefix "\${pcfiledir}/..")
string(REPLACE "/" ";" kiln_libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(part IN LISTS kiln_libdir_parts)
  string(APPEND kiln_pc_prefix "/..")
endforeach()
configure_file(cmake/templates/kiln.pc.in ${CMAKE_BINARY_DIR}/generated/kiln.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

install(DIRECTORY families/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/families
  FILES_MATCHING PATTERN "manifest.toml" PATTERN "README.md" PATTERN "demo_config.json" PATTERN "common" EXCLUDE
  PATTERN "study*" EXCLUDE)
# The study demos the manifests name, at the same place relative to them (../../tests/data), so that
# `kiln validate` passes and `kiln study FAMILY` runs its demo from an install.
foreach(demo resnest_fashion_tiny resnet_fashion_tiny efficientnet_fashion_tiny)
  install(FILES tests/data/trained/${demo}/model.safetensors tests/data/trained/${demo}/config.json
    DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/tests/data/trained/${demo})
endforeach()
install(DIRECTORY tests/data/fashion_mnist/t10k-first2500 DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/tests/data/fashion_mnist)
install(FILES tests/data/fashion_mnist/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/tests/data/fashion_mnist)
# The detector study's demo: the golden yolov10n (trained on Fashion-MNIST items) on the labelled detection set.
install(FILES tests/data/golden/yolov10n/model.safetensors tests/data/golden/yolov10n/config.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/tests/data/golden/yolov10n)
install(DIRECTORY tests/data/fashion_detect DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/tests/data)

if(TARGET kiln_python)
  install(TARGETS kiln_python LIBRARY DESTINATION ${KILN_PYTHON_INSTALL_DIR}/kiln)
  install(FILES python/kiln/__init__.py DESTINATION ${KILN_PYTHON_INSTALL_DIR}/kiln)
endif()

set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack's DEB generator would put it above each package's own summary.
set(CPACK_PACKAGE_CONTACT "kiln maintainers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # kiln-dev and kiln-cuda depend on kiln of the same version
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the Debian libraries the binaries link
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME kiln)
# The Python module (in dist-packages) needs an interpreter and numpy, which no binary links.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "python3, python3-numpy")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME kiln-dev)
# Each package's description: its own summary line (Debian's first line), then its text.
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "The kiln program, libkiln.so (the C API), its core with the CPU backends, the family manifests with\ntheir study demos, and the Python module. Runs without CUDA: the cuda backend is the package kiln-cuda.")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "Headers and build files for libkiln: kiln/kiln.h (C), kiln/kiln.hpp (C++), the CMake package\n(find_package(kiln) gives kiln::kiln) and kiln.pc.")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "Engine builder and runtime for vision models: program, libraries, CPU backends\n${CPACK_COMPONENT_RUNTIME_DESCRIPTION}")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Development files of kiln's C and C++ API\n${CPACK_COMPONENT_DEV_DESCRIPTION}")
set(kiln_packages runtime dev)
if(TARGET kiln_cuda)
  list(APPEND kiln_packages cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME kiln-cuda)
  # CUDA and cuDNN come from NVIDIA's installers, not from Debian: the description names what the plugin
  # needs instead of dpkg-shlibdeps.
  set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
  file(STRINGS ${KILN_CUDNN_INCLUDE_DIR}/cudnn_version.h kiln_cudnn_lines REGEX "#define CUDNN_(MAJOR|MINOR) ")
  string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*" "\\1.\\2" kiln_cudnn_version "${kiln_cudnn_lines}")
  string(REPLACE ";" ", " kiln_cuda_dir_list "${kiln_cuda_dirs}")
  set(CPACK_COMPONENT_CUDA_DESCRIPTION
    "The cuda backend (NVIDIA GPUs of compute capability 9.0): libkiln_cuda.so, loaded by kiln when a command\nor a plan asks for the cuda backend. Needs the CUDA ${CUDAToolkit_VERSION_MAJOR} runtime, cuBLASLt and cuDNN ${kiln_cudnn_version},\nwhich are not Debian packages: it looks for them in ${kiln_cuda_dir_list} (where the build found them)\nand on the loader's path.")
  set(CPACK_DEBIAN_CUDA_DESCRIPTION "kiln's cuda backend for NVIDIA GPUs\n${CPACK_COMPONENT_CUDA_DESCRIPTION}")
endif()
set(CPACK_COMPONENTS_ALL ${kiln_packages})
include(CPack)
cpack_add_component(runtime DISPLAY_NAME "kiln")
cpack_add_component(dev DISPLAY_NAME "kiln development files" DEPENDS runtime)
if(TARGET kiln_cuda)
  cpack_add_component(cuda DISPLAY_NAME "kiln cuda backend" DEPENDS runtime)
endif()
