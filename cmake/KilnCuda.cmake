# The CUDA backend is built when a CUDA compiler, the toolkit and cuDNN are found; KILN_CUDA=OFF skips
# it. Kernels are compiled for Hopper (sm_90) only. cuDNN may live outside the toolkit (the GPU machine
# has it in a Python package): KILN_CUDNN_ROOT names its folder (include/ and lib/ below it).
include(CheckLanguage)
# The toolkit's usual place, for machines whose PATH lacks it.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
find_package(CUDAToolkit QUIET)
set(KILN_CUDNN_ROOT "" CACHE PATH "Folder holding cuDNN's include/ and lib/ (default: search the toolkit)")
find_path(KILN_CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${KILN_CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu)
find_library(KILN_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${KILN_CUDNN_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
set(kiln_cuda_found OFF)
if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND KILN_CUDNN_INCLUDE_DIR AND KILN_CUDNN_LIBRARY)
  set(kiln_cuda_found ON)
endif()
option(KILN_CUDA "Build the CUDA backend (needs the CUDA toolkit and cuDNN)" ${kiln_cuda_found})
if(KILN_CUDA)
  if(NOT kiln_cuda_found)
    message(FATAL_ERROR "KILN_CUDA is ON but the CUDA compiler, toolkit or cuDNN was not found "
      "(compiler: '${CMAKE_CUDA_COMPILER}', cudnn.h: '${KILN_CUDNN_INCLUDE_DIR}', "
      "libcudnn: '${KILN_CUDNN_LIBRARY}'); set KILN_CUDNN_ROOT or KILN_CUDA=OFF")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  add_library(kiln_cudnn INTERFACE)
  target_include_directories(kiln_cudnn SYSTEM INTERFACE ${KILN_CUDNN_INCLUDE_DIR})
  target_link_libraries(kiln_cudnn INTERFACE ${KILN_CUDNN_LIBRARY})
  message(STATUS "kiln: CUDA backend ON (cuDNN ${KILN_CUDNN_LIBRARY}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "kiln: CUDA backend OFF")
endif()
