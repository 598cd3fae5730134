# Precompiled third-party headers for the sanitizer trees (TPB_PCH, on in their presets). Under
# clang -O0 with ASan a translation unit spends ~3 s parsing nlohmann/json.hpp and ~2 s on
# gtest.h; 108 of the tree's ~260 objects include the first and the 63 unit-test sources the
# second. With a header precompiled per target the ASan tree's build went from 12.4 to 8.4 min
# on 2 cores (CMake also has clang instantiate the headers' templates once, in the header).
# Not in the other builds: under gcc -O3 the unit tests' build gained ~10% (their time is in
# optimising, not parsing), and ccache runs the compiler uncached on a precompiled header, which
# would cost the Release, no-MPI and install builds the objects they share.

# Every target defined in `dir` and its subfolders.
function(tpb_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    tpb_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# json for each of `targets` built from at least 3 C++ sources (a header precompiled for one
# or two costs what it saves); gtest.h too where the target links GTest.
function(tpb_precompile_heavy_headers)
  foreach(t IN LISTS ARGN)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cc$")
    list(LENGTH sources n)
    if(n LESS 3)
      continue()
    endif()
    set(headers <nlohmann/json.hpp> <string> <vector>)
    get_target_property(links ${t} LINK_LIBRARIES)
    if(links AND "GTest::gtest" IN_LIST links)
      list(APPEND headers <gtest/gtest.h>)
    endif()
    target_precompile_headers(${t} PRIVATE ${headers})
  endforeach()
endfunction()
