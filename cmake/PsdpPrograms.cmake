# psdp_install_program(<target>): installs a program into the prefix's bin dir with a runtime path relative to
# the program itself ($ORIGIN/../lib for the default layout), so that the programs of a prefix install find
# libpsdp.so without LD_LIBRARY_PATH, wherever the prefix is and after it is moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(PSDP_PROGRAM_INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
else()
  file(RELATIVE_PATH _psdp_bin_to_lib "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
  set(PSDP_PROGRAM_INSTALL_RPATH "\$ORIGIN/${_psdp_bin_to_lib}")
endif()

function(psdp_install_program target)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "${PSDP_PROGRAM_INSTALL_RPATH}")
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()
