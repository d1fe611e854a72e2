# Helpers shared by every component.

# Warnings and sanitizers for our own targets (not for third-party code).
# Includes are written from the repository root ("common/bus/publisher.hpp"), so every target has
# the root as a PRIVATE include directory: nothing is handed on through linking. Which module may
# include or link which is deploy/architecture.json's to say; architecture_test checks both the
# #include graph and the target graph against it.
function(spotlight_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  if(SPOTLIGHT_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()

# LibTorch headers are heavy: every target that includes them shares one precompiled header.
function(spotlight_use_torch target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(${target} PRIVATE ${TORCH_CXX_FLAGS})
  if(TARGET spotlight_torch_pch AND NOT target STREQUAL spotlight_torch_pch)
    target_precompile_headers(${target} REUSE_FROM spotlight_torch_pch)
  endif()
endfunction()

# spotlight_add_library(name SOURCES ... [LIBS ...] [PUBLIC_LIBS ...] [TORCH])
# LIBS are linked PRIVATE (what the .cpp files use); PUBLIC_LIBS only those a public header of the
# library includes, so that its users compile against them too. TORCH links LibTorch PUBLIC (the
# headers pass tensors) and shares the precompiled header.
function(spotlight_add_library name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;LIBS;PUBLIC_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  spotlight_target_defaults(${name})
  if(ARG_PUBLIC_LIBS)
    target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_LIBS})
  endif()
  if(ARG_LIBS)
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  endif()
  if(ARG_TORCH)
    spotlight_use_torch(${name})
  endif()
endfunction()

# spotlight_add_test(name SOURCES ... [LIBS ...] [LABELS ...] [TORCH] [TIMEOUT s])
# One GoogleTest executable registered as one CTest test with the given labels
# (unit, redis, e2e, compose, gpu).
function(spotlight_add_test name)
  cmake_parse_arguments(ARG "TORCH" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  spotlight_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(ARG_TORCH)
    spotlight_use_torch(${name})
  endif()
  add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "SPOTLIGHT_SOURCE_DIR=${PROJECT_SOURCE_DIR};SPOTLIGHT_BINARY_DIR=${PROJECT_BINARY_DIR}")
  # A GPU test that skipped (no device) shows as skipped, not passed (scripts/gpu-check counts).
  if("gpu" IN_LIST ARG_LABELS)
    set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endif()
endfunction()
