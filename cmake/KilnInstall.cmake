# `cmake --install`: the kiln program, libkiln.so with its headers, a CMake package (find_package(kiln
# CONFIG) -> kiln::kiln), kiln.pc for pkg-config, the family manifests (found by the installed kiln in
# <prefix>/share/kiln/families, src/manifest/manifest_location.h) and the Python module.
# `cpack -G DEB` packages the same tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
  "Where the Python package kiln is installed, below the prefix (Debian's layout)")

# The binaries find the CUDA toolkit's libraries and cuDNN where the build found them, installed or
# not: their RPATH is set at link time, so installing rewrites nothing.
set(kiln_runtime_dirs "")
if(KILN_CUDA)
  get_filename_component(kiln_cudnn_dir ${KILN_CUDNN_LIBRARY} DIRECTORY)
  set(kiln_runtime_dirs ${CUDAToolkit_LIBRARY_DIR} ${kiln_cudnn_dir})
  list(REMOVE_DUPLICATES kiln_runtime_dirs)
endif()
set(kiln_installed_binaries kiln kiln_shared)
if(TARGET kiln_python)
  list(APPEND kiln_installed_binaries kiln_python)
endif()
set_target_properties(${kiln_installed_binaries} PROPERTIES
  BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "${kiln_runtime_dirs}")
# The kiln program finds libkiln.so beside it in the build folder (lib/) and in its prefix once installed.
set_target_properties(kiln PROPERTIES
  INSTALL_RPATH "\$ORIGIN/lib;\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${kiln_runtime_dirs}")
# libkiln.so finds libkiln_waits.so beside it, in the build folder's lib/ as in the prefix.
set_target_properties(kiln_shared PROPERTIES INSTALL_RPATH "\$ORIGIN;${kiln_runtime_dirs}")
set_target_properties(kiln_waits PROPERTIES BUILD_WITH_INSTALL_RPATH ON)

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_waits EXPORT kilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kiln_shared EXPORT kilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/kiln/kiln.h include/kiln/kiln.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

set(kiln_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${kiln_cmake_dir})
configure_package_config_file(cmake/templates/kilnConfig.cmake.in ${CMAKE_BINARY_DIR}/generated/kilnConfig.cmake
  INSTALL_DESTINATION ${kiln_cmake_dir})
# Before 1.0 a minor release may change the ABI (the SONAME carries major.minor).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/kilnConfig.cmake ${CMAKE_BINARY_DIR}/generated/kilnConfigVersion.cmake
  DESTINATION ${kiln_cmake_dir})

# Relocatable: the prefix is found from the .pc file's own folder (<prefix>/LIBDIR/pkgconfig).
set(kiln_pc_prefix "\${pcfiledir}/..")
string(REPLACE "/" ";" kiln_libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(part IN LISTS kiln_libdir_parts)
  string(APPEND kiln_pc_prefix "/..")
endforeach()
configure_file(cmake/templates/kiln.pc.in ${CMAKE_BINARY_DIR}/generated/kiln.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

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
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Engine builder, runtime and FP8 study tool for vision models")
set(CPACK_PACKAGE_CONTACT "kiln maintainers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries the binaries link
# The Python module (in dist-packages) needs an interpreter and numpy, which no binary links.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-numpy")
include(CPack)
