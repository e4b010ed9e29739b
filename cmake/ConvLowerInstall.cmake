# `cmake --install` of ConvLower: the libraries, headers (hand-written and
# TableGen'd), the C API library, the tools and a relocatable CMake package
# (lib/cmake/ConvLower/ConvLowerConfig.cmake) for find_package(ConvLower).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CONV_LOWER_INSTALLED_LIBRARIES
  MLIRConvLowerDialect
  MLIRConvLowerCommonTransforms
  MLIRConvLowerCPUTransforms
  MLIRConvLowerGPUTransforms
  MLIRConvLowerTransformOps
  MLIRConvLowerCPUPipelines
  MLIRConvLowerPipelines
  MLIRConvLowerRunner
  ConvLowerCAPI
  convrt
  convrt_host
)
install(TARGETS ${CONV_LOWER_INSTALLED_LIBRARIES}
  EXPORT ConvLowerTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS conv-opt conv-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ConvLower
                  ${PROJECT_SOURCE_DIR}/include/ConvLower-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/ConvLower
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/convrt
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(CONV_LOWER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ConvLower)
install(EXPORT ConvLowerTargets NAMESPACE ConvLower::
  DESTINATION ${CONV_LOWER_CMAKE_DIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/ConvLowerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/ConvLowerConfig.cmake
  INSTALL_DESTINATION ${CONV_LOWER_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/ConvLowerConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/ConvLowerConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/ConvLowerConfigVersion.cmake
  DESTINATION ${CONV_LOWER_CMAKE_DIR})
