# The dependencies from TPB_DEPS_DIR under the names the system's packages give them, so the
# rest of the build is the same either way. fmt is used header-only (FMT_HEADER_ONLY), so no
# library of it is needed.
foreach(_h nlohmann/json.hpp CLI/CLI.hpp fmt/format.h cblas.h)
  if(NOT EXISTS "${TPB_DEPS_DIR}/include/${_h}")
    message(FATAL_ERROR "TPB_DEPS_DIR=${TPB_DEPS_DIR}: include/${_h} is missing "
                        "(make the folder with launch/device-bundle.sh)")
  endif()
endforeach()
find_library(TPB_BUNDLED_OPENBLAS NAMES openblas libopenblas.so.0 PATHS "${TPB_DEPS_DIR}/lib"
             NO_DEFAULT_PATH REQUIRED)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
                      INTERFACE_INCLUDE_DIRECTORIES "${TPB_DEPS_DIR}/include")
add_library(CLI11::CLI11 INTERFACE IMPORTED)
set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TPB_DEPS_DIR}/include")
add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TPB_DEPS_DIR}/include"
                      INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
add_library(PkgConfig::OPENBLAS INTERFACE IMPORTED)
set_target_properties(PkgConfig::OPENBLAS PROPERTIES
                      INTERFACE_INCLUDE_DIRECTORIES "${TPB_DEPS_DIR}/include"
                      INTERFACE_LINK_LIBRARIES "${TPB_BUNDLED_OPENBLAS}")
# The bundled OpenBLAS and its Fortran runtime are found at run time beside the binary's rpath.
set(CMAKE_BUILD_RPATH "${TPB_DEPS_DIR}/lib")
set(CMAKE_INSTALL_RPATH "${TPB_DEPS_DIR}/lib")
message(STATUS "tpbench: dependencies from ${TPB_DEPS_DIR}")
