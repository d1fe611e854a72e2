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

# Test tiers. Every test carries one tier label, and the tier sets its budget and how it shares
# the machine under `ctest -j N`:
#   tier     timeout budget  order  CPU slots (PROCESSORS)
#   unit        60 s          1st    1   logic and single processes; most run in parallel
#   redis      300 s          2nd    1   a real redis-server of its own on a free port
#   gpu        600 s          3rd    1   skips (reported as skipped) without a GPU
#   e2e        900 s          4th    2   service binaries as processes; under -j 2 each runs alone
#   fuzz       900 s          5th    2
#   compose   1800 s          last   2   docker compose end to end
#   build     3600 s          last   2   the core built alone
#   tidy      3600 s          last   2   clang-tidy on changed files
# A test's TIMEOUT may be lower than its tier's budget, never higher (configure fails). The order
# is CTest's COST, which decides what starts first when no timings of an earlier run exist (a
# clean clone, as in CI). A test that exits 77 is reported as skipped (SKIP_RETURN_CODE): the
# GoogleTest main of tests/support does that when every selected test skipped.
set(SPOTLIGHT_TEST_TIERS unit redis gpu e2e fuzz compose build tidy)
set(SPOTLIGHT_TEST_BUDGET_unit 60)
set(SPOTLIGHT_TEST_BUDGET_redis 300)
set(SPOTLIGHT_TEST_BUDGET_gpu 600)
set(SPOTLIGHT_TEST_BUDGET_e2e 900)
set(SPOTLIGHT_TEST_BUDGET_fuzz 900)
set(SPOTLIGHT_TEST_BUDGET_compose 1800)
set(SPOTLIGHT_TEST_BUDGET_build 3600)
set(SPOTLIGHT_TEST_BUDGET_tidy 3600)
set(SPOTLIGHT_TEST_SKIP_CODE 77)

# spotlight_test_properties(name LABELS tier [TIMEOUT s] [ENVIRONMENT ...]): the tier's budget,
# order, CPU slots and skip code for a test registered with add_test() (scripts, Python).
function(spotlight_test_properties name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  list(GET ARG_LABELS 0 tier)
  list(FIND SPOTLIGHT_TEST_TIERS "${tier}" order)
  if(order EQUAL -1)
    message(FATAL_ERROR "test ${name}: its first label '${tier}' is no tier (${SPOTLIGHT_TEST_TIERS})")
  endif()
  set(budget ${SPOTLIGHT_TEST_BUDGET_${tier}})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT ${budget})
  elseif(ARG_TIMEOUT GREATER budget)
    message(FATAL_ERROR "test ${name}: TIMEOUT ${ARG_TIMEOUT} exceeds the ${tier} tier's budget of "
                        "${budget} s (make it faster, or give it a later tier)")
  endif()
  list(LENGTH SPOTLIGHT_TEST_TIERS tiers)
  math(EXPR cost "(${tiers} - ${order}) * 1000")
  set(processors 1)
  if(order GREATER 2)
    set(processors 2)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    COST ${cost} PROCESSORS ${processors} SKIP_RETURN_CODE ${SPOTLIGHT_TEST_SKIP_CODE})
  if(ARG_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
endfunction()

# The GoogleTest main every test executable links (tests/support/gtest_main.cpp): exit 77 when
# every selected test skipped and none failed.
function(spotlight_test_main_library)
  if(NOT TARGET spotlight_test_main)
    add_library(spotlight_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/gtest_main.cpp)
    spotlight_target_defaults(spotlight_test_main)
    target_link_libraries(spotlight_test_main PUBLIC GTest::gtest)
  endif()
endfunction()

# spotlight_add_test(name SOURCES ... [LIBS ...] [LABELS tier ...] [TORCH] [TIMEOUT s]
#                    [SPLIT suffix filter ...])
# One GoogleTest executable registered as one CTest test in the given tier (default unit). SPLIT
# registers the cases matching a GoogleTest filter as a test of their own, name_suffix, so that
# cases needing something the machine may lack (CURVE, kubectl) report as skipped by themselves
# instead of hiding inside a passing test; the main test runs every other case.
function(spotlight_add_test name)
  cmake_parse_arguments(ARG "TORCH" "TIMEOUT" "SOURCES;LIBS;LABELS;SPLIT" ${ARGN})
  spotlight_test_main_library()
  add_executable(${name} ${ARG_SOURCES})
  spotlight_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} spotlight_test_main GTest::gtest
    Threads::Threads)
  if(ARG_TORCH)
    spotlight_use_torch(${name})
  endif()
  set(properties LABELS ${ARG_LABELS} ENVIRONMENT
    "SPOTLIGHT_SOURCE_DIR=${PROJECT_SOURCE_DIR};SPOTLIGHT_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(ARG_TIMEOUT)
    list(APPEND properties TIMEOUT ${ARG_TIMEOUT})
  endif()
  set(excluded "")
  while(ARG_SPLIT)
    list(POP_FRONT ARG_SPLIT suffix filter)
    add_test(NAME ${name}_${suffix} COMMAND ${name} --gtest_color=no --gtest_filter=${filter})
    spotlight_test_properties(${name}_${suffix} ${properties})
    string(APPEND excluded "${filter}:")
  endwhile()
  if(excluded)
    string(REGEX REPLACE ":$" "" excluded "${excluded}")
    add_test(NAME ${name} COMMAND ${name} --gtest_color=no --gtest_filter=-${excluded})
  else()
    add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  endif()
  spotlight_test_properties(${name} ${properties})
endfunction()
