# Install rules (included from CMakeLists.txt when AMP_LAB_INSTALL is on). `cmake --install build --prefix P`:
#   P/include/amp/*.h                          the amp library's public headers
#   P/lib/libamp_lab.a                         the amp library
#   P/lib/cmake/amp_lab/                       package config: find_package(amp_lab CONFIG) -> amp_lab::amp
#                                              (with AmpLabTorch.cmake: CUDA set-up, C++ standard)
#   P/bin/amp-lab, P/bin/lab01_... lab08_...   the runner and the lab executables (AMP_LAB_BUILD_LABS)
#   P/share/amp-lab/quiz.yaml                  the questions the runner asks
#   P/share/amp-lab/glossary.yaml              the terms it glosses
#   P/share/amp-lab/exercises.yaml             the exercises and their hints
#   P/share/doc/amp_lab/                       README.md, CHANGELOG.md
# Components: amp_lab_library (headers, library, package) and amp_lab_runner (runner, labs, data files).
include(CMakePackageConfigHelpers)

set(AMP_LAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/amp_lab)

# Every header of src/amp is public: each includes only LibTorch, the standard library and its siblings.
file(GLOB AMP_LAB_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/amp/*.h)
install(FILES ${AMP_LAB_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/amp COMPONENT amp_lab_library)

install(TARGETS amp_lab_amp EXPORT amp_lab_targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT amp_lab_library)
install(EXPORT amp_lab_targets NAMESPACE amp_lab:: FILE amp_labTargets.cmake
        DESTINATION ${AMP_LAB_CMAKE_DIR} COMPONENT amp_lab_library)

# The LibTorch this library was compiled against: the config tries it after the consumer's own hints.
set(AMP_LAB_BUILT_WITH_TORCH_DIR "${Torch_DIR}")
set(AMP_LAB_BUILT_WITH_TORCH_VERSION "${Torch_VERSION}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/amp_labConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/amp_labConfig.cmake
  INSTALL_DESTINATION ${AMP_LAB_CMAKE_DIR})
# From 1.0.0 only a major version may break the API, so a request for 1.0 accepts any 1.y.z from 1.0 on.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/amp_labConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/amp_labConfig.cmake ${PROJECT_BINARY_DIR}/package/amp_labConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/AmpLabTorch.cmake
        DESTINATION ${AMP_LAB_CMAKE_DIR} COMPONENT amp_lab_library)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT amp_lab_library)

if(AMP_LAB_BUILD_LABS)
  list(TRANSFORM AMP_LAB_LABS PREPEND lab OUTPUT_VARIABLE _amp_lab_exes)
  # LibTorch is a set of shared libraries outside the prefix: the installed programs keep the path to
  # them (only that one: the link path would add folders that MKL's CMake files name on other systems).
  get_filename_component(_amp_lab_torch_libdir "${TORCH_LIBRARY}" DIRECTORY)
  set_target_properties(amp-lab ${_amp_lab_exes} PROPERTIES INSTALL_RPATH "${_amp_lab_torch_libdir}")
  install(TARGETS amp-lab ${_amp_lab_exes} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT amp_lab_runner)
  # The runner looks for them at AMP_LAB_DATA_FROM_BIN (cmake/amp_lab_paths.h.in) from its own folder.
  install(FILES ${PROJECT_SOURCE_DIR}/quiz.yaml ${PROJECT_SOURCE_DIR}/glossary.yaml ${PROJECT_SOURCE_DIR}/exercises.yaml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/amp-lab COMPONENT amp_lab_runner)
endif()
