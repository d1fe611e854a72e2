# cmake -DCOMPILER=c++ -DSOURCE_DIR=<repo> -DSNIPPET=<file.cpp> -P expect_compile_error.cmake
# Passes when SNIPPET fails to compile with a diagnostic from the log API's format check (fmt's
# or the argument count's), fails when it compiles or fails for another reason.
execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only -I${SOURCE_DIR} ${SNIPPET}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "${SNIPPET} compiled, but its format string does not fit its arguments")
endif()
if(NOT err MATCHES "arguments_and_placeholders_differ|error_handler::on_error")
  message(FATAL_ERROR "${SNIPPET} failed to compile for another reason:\n${err}")
endif()
message(STATUS "${SNIPPET}: rejected at compile time, as it should be")
