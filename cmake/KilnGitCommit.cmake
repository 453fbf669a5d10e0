# Run at every build (cmake -P): writes OUTPUT, a header defining KILN_GIT_COMMIT as the source tree's
# commit ("-dirty" when tracked files have uncommitted changes, "unknown" outside git), rewriting it only
# when the value changed so that only what includes it recompiles. Studies record it.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE git_failed)
if(git_failed OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE git_dirty
                  ERROR_QUIET)
  if(git_dirty)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/KilnGitCommit.cmake.\n#pragma once\n#define KILN_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
