# `cmake --install <build dir> --prefix P` installs the klab and klab-bench executables (bin/),
# libklab (lib/), the public headers (include/klab/: klab.hpp and the harness headers it includes)
# and a CMake package, so that a program elsewhere can do
#   find_package(klab CONFIG REQUIRED)          # with CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE klab::klab)
# (examples/ is such a program). The Python module installs through `pip install .` instead
# (component `python`, python/CMakeLists.txt), never through a plain `cmake --install`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS klab klab-bench RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(TARGETS klab_library EXPORT klabTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" "${CMAKE_INSTALL_INCLUDEDIR}/klab")

# klab.hpp, and the harness headers it includes, at the paths it includes them by. A consumer
# build (examples/ in CI) fails if one is missing.
install(FILES "${PROJECT_SOURCE_DIR}/api/include/klab/klab.hpp" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/klab")
install(FILES "${PROJECT_SOURCE_DIR}/harness/error.hpp" "${PROJECT_SOURCE_DIR}/harness/host_device.hpp"
              "${PROJECT_SOURCE_DIR}/harness/image.hpp"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/klab/harness")
install(FILES "${PROJECT_SOURCE_DIR}/harness/io/image_io.hpp" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/klab/harness/io")

set(KLAB_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/klab")
install(EXPORT klabTargets NAMESPACE klab:: DESTINATION "${KLAB_PACKAGE_DIR}")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/klabConfig.cmake.in" "${PROJECT_BINARY_DIR}/klabConfig.cmake"
  INSTALL_DESTINATION "${KLAB_PACKAGE_DIR}")
# 0.x: a consumer written for 0.1 takes any 0.1.z, not 0.2.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/klabConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/klabConfig.cmake" "${PROJECT_BINARY_DIR}/klabConfigVersion.cmake"
        DESTINATION "${KLAB_PACKAGE_DIR}")
