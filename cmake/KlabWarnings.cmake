# One INTERFACE target carries the warning flags for host code (g++), host code compiled by nvcc
# (forwarded with -Xcompiler) and device code (nvcc's own diagnostics).
add_library(klab_warnings INTERFACE)
target_compile_options(klab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow --Wreorder --Wno-deprecated-gpu-targets>)
if(KLAB_WARNINGS_AS_ERRORS)
  target_compile_options(klab_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
