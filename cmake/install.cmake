# What `cmake --install` lays out: bin/tpbench, and share/tpbench/ holding configs/ and the
# results tools (plot.py and the modules it imports, the schema). tpbench finds them from its own
# location (harness/config/config_dir.h), so an installed tree still works after it is moved.
install(TARGETS tpbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Keep the MPI, OpenBLAS or CUDA folders it was linked against (a module or Spack prefix) in the
# installed binary's RPATH: CMake drops the build tree's RPATH on install.
set_target_properties(tpbench PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(DIRECTORY configs/ DESTINATION ${TPB_DATA_DIR}/configs)
install(PROGRAMS results/plot.py results/aiconfigurator_import.py DESTINATION ${TPB_DATA_DIR}/results)
install(FILES results/plot_data.py results/tpbench_results.py results/SCHEMA.md
              results/aiconfigurator_tables.py
        DESTINATION ${TPB_DATA_DIR}/results)
