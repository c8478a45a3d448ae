# Finds every dependency, then stops with ONE message that names the Debian packages for all that
# are missing (scripts/bootstrap.sh installs exactly these). NPP is optional.
set(_klab_missing "")

macro(klab_require package debian_package)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    list(APPEND _klab_missing "${package} (Debian: ${debian_package})")
  endif()
endmacro()

klab_require(CUDAToolkit "nvidia-cuda-toolkit, or NVIDIA's CUDA Toolkit 12.x/13.x")
klab_require(GTest "libgtest-dev libgmock-dev")
klab_require(benchmark "libbenchmark-dev")
klab_require(fmt "libfmt-dev")
klab_require(PNG "libpng-dev")
klab_require(JPEG "libjpeg-dev")
klab_require(CLI11 "libcli11-dev")
klab_require(nlohmann_json "nlohmann-json3-dev")

if(_klab_missing)
  list(JOIN _klab_missing "\n  " _klab_missing_text)
  message(FATAL_ERROR
    "klab cannot be configured; these dependencies were not found:\n  ${_klab_missing_text}\n"
    "Install them with: bash scripts/bootstrap.sh (or apt-get install the packages named above).")
endif()

# NPP: the vendor baseline. In the CUDA Toolkit on GPU machines, usually absent on CPU machines.
if(TARGET CUDA::nppif AND TARGET CUDA::nppist AND TARGET CUDA::nppc)
  set(KLAB_HAVE_NPP ON)
else()
  set(KLAB_HAVE_NPP OFF)
endif()
message(STATUS "klab: NPP baseline ${KLAB_HAVE_NPP}; CUDA ${CUDAToolkit_VERSION}; architectures ${CMAKE_CUDA_ARCHITECTURES}")
