# Installs the library, the public header, the tools, a CMake package (find_package(psdp CONFIG), target
# psdp::psdp) and a pkg-config file (psdp.pc).
include(CMakePackageConfigHelpers)

install(TARGETS psdp EXPORT psdpTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/psdp/psdp.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/psdp)

set(PSDP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/psdp)
install(EXPORT psdpTargets NAMESPACE psdp:: DESTINATION ${PSDP_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/psdpConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/psdpConfig.cmake INSTALL_DESTINATION ${PSDP_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/psdpConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/psdpConfig.cmake ${PROJECT_BINARY_DIR}/psdpConfigVersion.cmake
        DESTINATION ${PSDP_CMAKE_DIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/psdp.pc.in ${PROJECT_BINARY_DIR}/psdp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/psdp.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
