# The text of a source file that its variant's tuning records depend on: the file without its
# comment-only lines (a line whose first non-blank characters are //) and blank lines, so that
# correcting a comment or a preamble does not make the tuning records stale. A comment after code
# on the same line counts, as does a /* */ comment: only whole lines are dropped, so no edit of
# code can go unnoticed (a // inside a string literal is left alone).
# Usage: klab_code_text(<out-var> "<text>"). kernels/CMakeLists.txt hashes it;
# tests/cmake/test_source_hash.cmake checks it.
function(klab_code_text out text)
  # A newline first, so that the file's first line is matched like the others.
  string(REGEX REPLACE "\n[ \t]*//[^\n]*" "" code "\n${text}")
  # Runs of blank lines (and of lines of spaces) become one line break; then a leading one goes.
  string(REGEX REPLACE "(\n[ \t\r]*)+\n" "\n" code "${code}")
  string(REGEX REPLACE "^\n" "" code "${code}")
  set(${out} "${code}" PARENT_SCOPE)
endfunction()
