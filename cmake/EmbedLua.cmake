# spotlight_embed_lua(target HEADER path NAMESPACE ns SCRIPTS file.lua ...)
#
# Embeds Lua scripts kept as .lua files in the program: writes the header
# ${SPOTLIGHT_GENERATED_DIR}/<path> (included as "<path>"), which defines for each script
#   inline constexpr redis::EmbeddedScript k<Name>{"<name>", <text>, <files>};
# and kAll, every script of the header, in the order given. <Name> is the file name without .lua in
# PascalCase (reclaim_from.lua -> kReclaimFrom).
#
# Lua has no include: a script that needs shared functions names their files, relative to its own
# folder, in a header comment line
#   -- Requires: lib/stream.lua lib/dead_letter.lua
# and its text is those files' contents, in that order, then its own: one chunk of Lua whose
# `local function`s the script calls. files lists them (relative to the repository root) in the
# same order, the script last.
#
# The header is written when CMake configures, and every .lua file read is a configure
# dependency: editing one re-runs CMake at the next build, which rewrites the header (only when its
# text changes) and so rebuilds what includes it.
set(SPOTLIGHT_GENERATED_DIR "${PROJECT_BINARY_DIR}/generated")

function(spotlight_embed_lua target)
  cmake_parse_arguments(ARG "" "HEADER;NAMESPACE" "SCRIPTS" ${ARGN})
  set(definitions "")
  set(all "")
  list(LENGTH ARG_SCRIPTS count)
  foreach(script IN LISTS ARG_SCRIPTS)
    get_filename_component(path "${script}" ABSOLUTE)
    get_filename_component(folder "${path}" DIRECTORY)
    get_filename_component(name "${path}" NAME_WE)
    file(READ "${path}" own)
    set(parts "")
    if(own MATCHES "-- Requires:([^\n]*)")
      separate_arguments(required UNIX_COMMAND "${CMAKE_MATCH_1}")
      foreach(fragment IN LISTS required)
        list(APPEND parts "${folder}/${fragment}")
      endforeach()
    endif()
    list(APPEND parts "${path}")
    set(text "")
    set(files "")
    foreach(part IN LISTS parts)
      if(NOT EXISTS "${part}")
        message(FATAL_ERROR "${script}: requires ${part}, which does not exist")
      endif()
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${part}")
      file(READ "${part}" content)
      string(APPEND text "${content}")
      file(RELATIVE_PATH relative "${PROJECT_SOURCE_DIR}" "${part}")
      string(APPEND files "\"${relative}\", ")
    endforeach()
    if(text MATCHES "\\)lua\"")
      message(FATAL_ERROR "${script}: its text holds )lua\", which ends the C++ raw string")
    endif()
    # reclaim_from -> ReclaimFrom
    string(REPLACE "_" ";" words "${name}")
    set(pascal "")
    foreach(word IN LISTS words)
      string(SUBSTRING "${word}" 0 1 first)
      string(SUBSTRING "${word}" 1 -1 rest)
      string(TOUPPER "${first}" first)
      string(APPEND pascal "${first}${rest}")
    endforeach()
    string(REGEX REPLACE ", $" "" files "${files}")
    string(APPEND definitions
      "inline constexpr std::string_view k${pascal}Files[] = {${files}};\n"
      "inline constexpr redis::EmbeddedScript k${pascal}{\"${name}\", R\"lua(${text})lua\",\n"
      "                                                 k${pascal}Files};\n\n")
    string(APPEND all "k${pascal}, ")
  endforeach()
  string(REGEX REPLACE ", $" "" all "${all}")
  file(RELATIVE_PATH from "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  string(CONCAT header "#pragma once\n"
    "// Written by spotlight_embed_lua (cmake/EmbedLua.cmake) from the .lua files of ${from}:\n"
    "// edit those, not this file.\n\n"
    "#include <array>\n#include <string_view>\n\n"
    "#include \"common/redis/embedded_script.hpp\"\n\n"
    "namespace ${ARG_NAMESPACE} {\n\n"
    "${definitions}"
    "inline constexpr std::array<redis::EmbeddedScript, ${count}> kAll{${all}};\n\n"
    "}  // namespace ${ARG_NAMESPACE}\n")
  set(output "${SPOTLIGHT_GENERATED_DIR}/${ARG_HEADER}")
  file(WRITE "${output}.new" "${header}")
  configure_file("${output}.new" "${output}" COPYONLY)  # touched only when the text changed
  file(REMOVE "${output}.new")
  target_include_directories(${target} PRIVATE "${SPOTLIGHT_GENERATED_DIR}")
endfunction()
