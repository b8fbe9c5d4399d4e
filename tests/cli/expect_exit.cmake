# Runs one command and checks its exit status and output exactly (WILL_FAIL accepts any non-zero code).
#
#   cmake -DEXPECT_CODE=2 [-DSTDOUT_REGEX=re] [-DSTDERR_REGEX=re] [-DNOT_STDERR_REGEX=re]
#         [-DFRESH_DIR=dir] [-DCHECK_FILE=path -DFILE_REGEX=re]
#         -P expect_exit.cmake -- program arg...
#
# FRESH_DIR is emptied (created) before the run; CHECK_FILE must exist afterwards and match FILE_REGEX.
# Regexes are CMake regexes over the whole text (^ and $ anchor the text, not lines).
cmake_minimum_required(VERSION 3.19)

set(command "")
set(seen_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 0 ${last})
  if(seen_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(seen_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_exit.cmake: no command after --")
endif()
if(NOT DEFINED EXPECT_CODE)
  message(FATAL_ERROR "expect_exit.cmake: EXPECT_CODE is not set")
endif()

if(FRESH_DIR)
  file(REMOVE_RECURSE "${FRESH_DIR}")
  file(MAKE_DIRECTORY "${FRESH_DIR}")
endif()

execute_process(COMMAND ${command}
  RESULT_VARIABLE code
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)

string(REPLACE ";" " " shown "${command}")
set(report "command: ${shown}\nexit status: ${code}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT code STREQUAL EXPECT_CODE)
  message(FATAL_ERROR "expected exit status ${EXPECT_CODE}\n${report}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}'\n${report}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}'\n${report}")
endif()
if(DEFINED NOT_STDERR_REGEX AND err MATCHES "${NOT_STDERR_REGEX}")
  message(FATAL_ERROR "stderr matches '${NOT_STDERR_REGEX}' but must not\n${report}")
endif()
if(CHECK_FILE)
  if(NOT EXISTS "${CHECK_FILE}")
    message(FATAL_ERROR "${CHECK_FILE} was not written\n${report}")
  endif()
  file(READ "${CHECK_FILE}" content)
  if(NOT content MATCHES "${FILE_REGEX}")
    message(FATAL_ERROR "${CHECK_FILE} does not match '${FILE_REGEX}':\n${content}\n${report}")
  endif()
endif()
message(STATUS "${shown}: exit status ${code} as expected")
