# Writes OUT, a header defining
#   BRAID_COMMIT       the commit of SRC that is being built: `git describe --always --abbrev=12`, with "-dirty" when
#                      `git status --porcelain` lists anything (changed, staged or untracked files: all of them can
#                      change what is built, as the build globs its sources);
#   BRAID_DIRTY_FILES  the paths that status lists, one per line ("" for a clean tree),
# touching it only when it changes, so that every results file records the tree its binary was built from.
#
# A tree copied without usable git metadata (no .git, or a stale copy of it that would name the wrong commit) takes
# both from the environment of the build instead: BRAID_SOURCE_COMMIT, and BRAID_SOURCE_DIRTY_FILES (paths
# separated by newlines, spaces or commas). When BRAID_SOURCE_COMMIT is set, git is not asked at all.
set(dirty_files "")
if(DEFINED ENV{BRAID_SOURCE_COMMIT} AND NOT "$ENV{BRAID_SOURCE_COMMIT}" STREQUAL "")
  set(commit "$ENV{BRAID_SOURCE_COMMIT}")
  string(REGEX REPLACE "[ ,\n]+" ";" dirty_list "$ENV{BRAID_SOURCE_DIRTY_FILES}")
  foreach(path IN LISTS dirty_list)
    if(NOT path STREQUAL "")
      list(APPEND dirty_files "${path}")
    endif()
  endforeach()
  if(commit MATCHES "-dirty$" AND NOT dirty_files)
    message(WARNING "BRAID_SOURCE_COMMIT=${commit} is dirty but BRAID_SOURCE_DIRTY_FILES names no paths: results "
                    "files will not say what differed")
  endif()
else()
  # --no-optional-locks: other processes commit in the same checkout while we build; a status that refreshed the
  # index would hold .git/index.lock and make their `git add` fail.
  execute_process(COMMAND git --no-optional-locks describe --always --abbrev=12 WORKING_DIRECTORY ${SRC}
                  RESULT_VARIABLE describe_status OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND git --no-optional-locks status --porcelain WORKING_DIRECTORY ${SRC}
                  RESULT_VARIABLE status_status OUTPUT_VARIABLE status_text ERROR_QUIET)
  if(NOT describe_status EQUAL 0 OR NOT status_status EQUAL 0 OR commit STREQUAL "")
    set(commit unknown)
  else()
    # "XY path", or "XY old -> new" for a rename: the path is what follows the two status letters and a space.
    string(REPLACE "\n" ";" status_lines "${status_text}")
    foreach(line IN LISTS status_lines)
      if(line STREQUAL "")
        continue()
      endif()
      string(SUBSTRING "${line}" 3 -1 path)
      string(FIND "${path}" " -> " arrow)
      if(arrow GREATER -1)
        math(EXPR after "${arrow} + 4")
        string(SUBSTRING "${path}" ${after} -1 path)
      endif()
      list(APPEND dirty_files "${path}")
    endforeach()
    if(dirty_files)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()

# As C string literals: backslashes and quotes escaped, the paths joined by "\n".
function(c_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
c_string(commit_literal "${commit}")
list(JOIN dirty_files "\n" dirty_text)
c_string(dirty_literal "${dirty_text}")
string(REPLACE "\n" "\\n" dirty_literal "${dirty_literal}")

set(content "#pragma once\n#define BRAID_COMMIT \"${commit_literal}\"\n#define BRAID_DIRTY_FILES \"${dirty_literal}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUT} "${content}")
endif()
