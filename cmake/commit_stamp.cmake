# cmake -DSRC=<source dir> -DOUT=<header> -P commit_stamp.cmake: writes OUT, defining KERNELAB_COMMIT
# as SRC's HEAD, with "-dirty" when tracked files differ from it, when that changed. Run at every
# build, not only at configure, so that an incremental build names the commit it was built from (a
# configure-time stamp stayed at the first commit built; a build of uncommitted edits, measured after
# their commit, was recorded under the commit before them).
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SRC} RESULT_VARIABLE changed ERROR_QUIET)
  if(changed EQUAL 1)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "#define KERNELAB_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
