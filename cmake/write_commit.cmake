# Writes OUT (a header defining BRAID_COMMIT) from `git describe` of SRC, touching it only when it changes, so the
# commit that --json records is the one the binary was built from (a "-dirty" suffix marks local changes).
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit unknown)
endif()
set(content "#pragma once\n#define BRAID_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUT} "${content}")
endif()
