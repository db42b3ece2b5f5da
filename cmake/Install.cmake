# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` puts where (docs/PACKAGING.md says why):
#   LIBDIR/libufile.so.0[.x.y] (+ .so)  the cuFile API under ufile's own name
#   LIBDIR/ufile/libcufile.so.0 (+ .so) the drop-in, off the default search path
#                                        so that it never shadows NVIDIA's by accident
#   INCLUDEDIR/ufile/                   include/ as it is in the tree: cufile.h beside,
#                                        never over, a CUDA toolkit's; ufile/*.h under it
#   LIBDIR/cmake/ufile/                 find_package(ufile): ufile::ufile, ufile::cufile
#   LIBDIR/pkgconfig/ufile.pc           pkg-config ufile
# Components: runtime (the libraries), dev (the rest).
include(CMakePackageConfigHelpers)

set(UFILE_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/ufile)
set(UFILE_INSTALL_DROPINDIR ${CMAKE_INSTALL_LIBDIR}/ufile)
set(UFILE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ufile)

# Consumers write #include <cufile.h> (as with NVIDIA's) and <ufile/...>: the
# targets' INSTALL_INTERFACE include folder (src/CMakeLists.txt) is this one.
set_target_properties(cufile_compat PROPERTIES EXPORT_NAME cufile)

install(TARGETS ufile EXPORT ufileTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS cufile_compat EXPORT ufileTargets
  LIBRARY DESTINATION ${UFILE_INSTALL_DROPINDIR}
    COMPONENT runtime NAMELINK_COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/include/cufile.h
  DESTINATION ${UFILE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ufile
  DESTINATION ${UFILE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp" PATTERN "*.cuh")

# CMake package.
install(EXPORT ufileTargets NAMESPACE ufile::
  DESTINATION ${UFILE_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ufileConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ufileConfig.cmake
  INSTALL_DESTINATION ${UFILE_INSTALL_CMAKEDIR}
  PATH_VARS UFILE_INSTALL_INCLUDEDIR UFILE_INSTALL_DROPINDIR)
# 0.x: the SONAME is libufile.so.0; a new major is a new SONAME.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ufileConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ufileConfig.cmake
  ${PROJECT_BINARY_DIR}/ufileConfigVersion.cmake
  DESTINATION ${UFILE_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config: paths relative to the .pc file (${pcfiledir}), so that the tree
# can be installed with --prefix or DESTDIR, or moved, and still be found.
function(ufile_pc_dir var dir)
  if(IS_ABSOLUTE "${dir}")
    set(${var} "${dir}" PARENT_SCOPE)
  else()
    set(${var} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(UFILE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH UFILE_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" UFILE_PC_UP "${UFILE_PC_UP}")
  set(UFILE_PC_PREFIX "\${pcfiledir}/${UFILE_PC_UP}")
endif()
ufile_pc_dir(UFILE_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
ufile_pc_dir(UFILE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/ufile.pc.in ${PROJECT_BINARY_DIR}/ufile.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ufile.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The Python package (python/ufile): under the prefix where that prefix's
# python3 looks (Debian: PREFIX/lib/python3.N/dist-packages; /usr:
# lib/python3/dist-packages), with _libpath.py naming the library relative to
# the package, so that a moved or DESTDIR install still finds it.
set(UFILE_PYTHON "/usr/bin/python3" CACHE FILEPATH "python3 whose layout the package installs for")
if(NOT DEFINED UFILE_INSTALL_PYTHONDIR AND EXISTS "${UFILE_PYTHON}")
  execute_process(COMMAND ${UFILE_PYTHON} -c
    "import sys,sysconfig;d='dist-packages' if 'dist-packages' in sysconfig.get_path('purelib') else 'site-packages';print('lib/python3/'+d if d=='dist-packages' and sys.argv[1]=='/usr' else 'lib/python%d.%d/%s'%(sys.version_info[0],sys.version_info[1],d))"
    ${CMAKE_INSTALL_PREFIX}
    OUTPUT_VARIABLE UFILE_PYDIR_GUESS OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT UFILE_PYDIR_GUESS)
  set(UFILE_PYDIR_GUESS "lib/python3/site-packages")
endif()
set(UFILE_INSTALL_PYTHONDIR "${UFILE_PYDIR_GUESS}" CACHE PATH
  "Where the ufile Python package goes, relative to the prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ufile DESTINATION ${UFILE_INSTALL_PYTHONDIR}
  COMPONENT runtime PATTERN __pycache__ EXCLUDE PATTERN "*.so*" EXCLUDE)
file(RELATIVE_PATH UFILE_PY_TO_LIB "/p/${UFILE_INSTALL_PYTHONDIR}/ufile"
  "/p/${CMAKE_INSTALL_LIBDIR}/libufile.so.0")
file(RELATIVE_PATH UFILE_PY_TO_DROPIN "/p/${UFILE_INSTALL_PYTHONDIR}/ufile"
  "/p/${UFILE_INSTALL_DROPINDIR}/libcufile.so.0")
file(WRITE ${PROJECT_BINARY_DIR}/python/_libpath.py
  "# Written by cmake --install: the library and the drop-in, relative to this folder.\n"
  "LIBRARY = \"${UFILE_PY_TO_LIB}\"\nDROPIN = \"${UFILE_PY_TO_DROPIN}\"\n")
install(FILES ${PROJECT_BINARY_DIR}/python/_libpath.py
  DESTINATION ${UFILE_INSTALL_PYTHONDIR}/ufile COMPONENT runtime)
