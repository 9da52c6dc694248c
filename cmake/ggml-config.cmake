# CMake package for ggml-rs, installed as <prefix>/lib/cmake/ggml/ggml-config.cmake by
# scripts/install. It defines what the reference ggml 0.25.1 package defines (the GGML_*
# variables of a shared build with the CPU and RPC backends; GGML_INCLUDE_DIR, GGML_LIB_DIR,
# GGML_*_LIBRARY; the imported targets ggml::ggml, ggml::ggml-base, ggml::ggml-cpu,
# ggml::ggml-rpc and ggml::all), so projects such as llama.cpp (LLAMA_USE_SYSTEM_GGML=ON, whose
# rpc-server is built when GGML_RPC is on) build against it unchanged.
#
# All code lives in libggml-rs.so.0. libggml-base.so.0, libggml.so.0, libggml-cpu.so.0 and
# libggml-rpc.so.0 are ELF filters on it that define exactly the reference libraries' symbols,
# so each target links what the reference's does, and every process has one copy of the
# library state. ggml::ggml does not pull in ggml::ggml-rpc: a program that only uses the
# registry (as llama.cpp's --rpc does) then needs the same libraries as on a stock, CPU-only
# ggml, and runs on either; a program that calls ggml-rpc.h directly links ggml::ggml-rpc.
#
# The file is relocatable: every path is derived from its own location.

get_filename_component(PACKAGE_PREFIX_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)

macro(set_and_check _var _file)
  set(${_var} "${_file}")
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "File or directory ${_file} referenced by variable ${_var} does not exist !")
  endif()
endmacro()

macro(check_required_components _NAME)
  foreach(comp ${${_NAME}_FIND_COMPONENTS})
    if(NOT ${_NAME}_${comp}_FOUND)
      if(${_NAME}_FIND_REQUIRED_${comp})
        set(${_NAME}_FOUND FALSE)
      endif()
    endif()
  endforeach()
endmacro()

# The configuration this package describes, in the reference's variable names: a shared
# library build with the CPU backend linked in (no dynamic backend loading) and no GPU backends.
set(GGML_VERSION "0.25.1")
set(GGML_VERSION_BASE "0.25.1")
set(GGML_VERSION_MAJOR "0")
set(GGML_VERSION_MINOR "25")
set(GGML_VERSION_PATCH "1")
set(GGML_BUILD_COMMIT "de3ff81")
set(GGML_IMPLEMENTATION "ggml-rs")
set(GGML_SHARED_LIB "ON")
set(GGML_STATIC "OFF")
set(GGML_STANDALONE "ON")
set(GGML_AVAILABLE_BACKENDS "ggml-cpu;ggml-cuda;ggml-rpc")
set(GGML_BACKEND_DL "OFF")
set(GGML_BACKEND_DIR "")
set(GGML_CPU "ON")
set(GGML_CPU_ALL_VARIANTS "OFF")
set(GGML_CPU_HBM "OFF")
set(GGML_CPU_KLEIDIAI "OFF")
set(GGML_CPU_REPACK "ON")
set(GGML_NATIVE "OFF")
set(GGML_LLAMAFILE "OFF")
set(GGML_OPENMP "OFF")
set(GGML_OPENMP_ENABLED "OFF")
set(GGML_ACCELERATE "OFF")
set(GGML_BLAS "OFF")
set(GGML_CANN "OFF")
set(GGML_CUDA "ON")
set(GGML_HEXAGON "OFF")
set(GGML_HIP "OFF")
set(GGML_METAL "OFF")
set(GGML_MUSA "OFF")
set(GGML_OPENCL "OFF")
set(GGML_OPENVINO "OFF")
set(GGML_RPC "ON")
set(GGML_RPC_RDMA "OFF")
set(GGML_SYCL "OFF")
set(GGML_VIRTGPU "OFF")
set(GGML_VULKAN "OFF")
set(GGML_WEBGPU "OFF")
set(GGML_ZDNN "OFF")
set(GGML_ZENDNN "OFF")
set(GGML_SCHED_MAX_COPIES "4")
set(GGML_SCHED_NO_REALLOC "OFF")
set(GGML_SANITIZE_ADDRESS "OFF")
set(GGML_SANITIZE_THREAD "OFF")
set(GGML_SANITIZE_UNDEFINED "OFF")
set(GGML_BUILD_TESTS "OFF")
set(GGML_BUILD_EXAMPLES "OFF")
set(GGML_PUBLIC_HEADERS "include/ggml.h;include/ggml-cpu.h;include/ggml-alloc.h;include/ggml-backend.h;include/ggml-cpp.h;include/ggml-cuda.h;include/ggml-opt.h;include/ggml-rpc.h;include/gguf.h")

include(CMakeFindDependencyMacro)
find_dependency(Threads)

set_and_check(GGML_INCLUDE_DIR "${PACKAGE_PREFIX_DIR}/include")
set_and_check(GGML_LIB_DIR "${PACKAGE_PREFIX_DIR}/lib")

# The development links (relative symlinks to the .so.0 files), as the reference's
# find_library() calls would report them.
set(GGML_LIBRARY "${GGML_LIB_DIR}/libggml.so")
set(GGML_BASE_LIBRARY "${GGML_LIB_DIR}/libggml-base.so")
set(GGML_CPU_LIBRARY "${GGML_LIB_DIR}/libggml-cpu.so")
set(GGML_RPC_LIBRARY "${GGML_LIB_DIR}/libggml-rpc.so")
set(GGML_CUDA_LIBRARY "${GGML_LIB_DIR}/libggml-cuda.so")

if(NOT TARGET ggml::ggml)
  foreach(_ggml_lib ggml ggml-base ggml-cpu ggml-rpc ggml-cuda)
    if(NOT EXISTS "${GGML_LIB_DIR}/lib${_ggml_lib}.so.0")
      set(ggml_FOUND FALSE)
      set(ggml_NOT_FOUND_MESSAGE "${GGML_LIB_DIR}/lib${_ggml_lib}.so.0 is missing")
      return()
    endif()
  endforeach()

  # An imported target for lib<name>.so.0, linked to `deps`.
  function(_ggml_import name deps)
    add_library(ggml::${name} SHARED IMPORTED)
    set_target_properties(ggml::${name}
      PROPERTIES
        IMPORTED_LOCATION "${GGML_LIB_DIR}/lib${name}.so.0"
        IMPORTED_SONAME "lib${name}.so.0"
        INTERFACE_INCLUDE_DIRECTORIES "${GGML_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${deps}")
  endfunction()

  _ggml_import(ggml-base "Threads::Threads")
  _ggml_import(ggml-cpu "ggml::ggml-base")
  set_target_properties(ggml::ggml-cpu PROPERTIES INTERFACE_COMPILE_FEATURES c_std_90)
  _ggml_import(ggml "ggml::ggml-base;ggml::ggml-cpu")
  _ggml_import(ggml-rpc "ggml::ggml-base")
  # ggml-cuda.h's functions; the backend finds the driver at run time and lists no device
  # where there is none, so the package offers it on every machine, as a CUDA build would.
  _ggml_import(ggml-cuda "ggml::ggml-base")
  foreach(_ggml_backend ggml-cpu ggml-rpc ggml-cuda)
    message(STATUS "Found ${GGML_LIB_DIR}/lib${_ggml_backend}.so.0")
  endforeach()

  add_library(ggml::all INTERFACE IMPORTED)
  set_target_properties(ggml::all
    PROPERTIES
      INTERFACE_LINK_LIBRARIES "ggml::ggml-cpu;ggml::ggml-cuda;ggml::ggml-rpc")
endif()

check_required_components(ggml)
