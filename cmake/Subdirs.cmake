# spotlight_add_subdirectories([NAME ...]): adds the named subfolders of the current folder, or
# every direct subfolder that has a CMakeLists.txt, in name order. Components live in their own
# folder and register themselves; no central list to edit.
#
# With SPOTLIGHT_CORE_ONLY only the compute core is added: a folder whose path from the
# repository root (tests/ stripped) is in SPOTLIGHT_CORE_FOLDERS, inside one, or above one.
function(spotlight_core_folder_wanted path out)
  set(${out} FALSE PARENT_SCOPE)
  if(NOT SPOTLIGHT_CORE_ONLY OR path STREQUAL "tests")
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  string(REGEX REPLACE "^tests/" "" path "${path}")
  foreach(core ${SPOTLIGHT_CORE_FOLDERS})
    string(FIND "${core}/" "${path}/" above)
    string(FIND "${path}/" "${core}/" inside)
    if(above EQUAL 0 OR inside EQUAL 0)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

macro(spotlight_add_subdirectories)
  if(${ARGC} GREATER 0)
    set(_spotlight_children ${ARGN})
  else()
    file(GLOB _spotlight_children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
         ${CMAKE_CURRENT_SOURCE_DIR}/*)
    list(SORT _spotlight_children)
  endif()
  foreach(_child ${_spotlight_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_child}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_child}/CMakeLists.txt)
      file(RELATIVE_PATH _spotlight_path ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${_child})
      spotlight_core_folder_wanted("${_spotlight_path}" _spotlight_wanted)
      if(_spotlight_wanted)
        add_subdirectory(${_child})
      endif()
    endif()
  endforeach()
endmacro()
