# Adds every direct subfolder of the current folder that has a CMakeLists.txt, in name order.
# Components live in their own folder and register themselves; no central list to edit.
macro(spotlight_add_subdirectories)
  file(GLOB _spotlight_children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _spotlight_children)
  foreach(_child ${_spotlight_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_child}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_child}/CMakeLists.txt)
      add_subdirectory(${_child})
    endif()
  endforeach()
endmacro()
