# What a variant's source hash covers (kernels/CMakeLists.txt), and the hash itself.
#
# klab_code_text(<out-var> "<text>"): the text of a source file that its variant's tuning records
# depend on: the file without its comment-only lines (a line whose first non-blank characters are
# //) and its blank lines, so that correcting a comment or a preamble leaves the records current.
# A comment after code on the same line counts, as does a /* */ comment. Dropping a whole line
# could hide a code change in three places, and a file that has any of them counts whole, comments
# included: a line that ends in a backslash (the next line is spliced to it, so a comment line or
# a blank line after it may be code), a raw string literal (R"), and a comment-only line that holds
# */ (code may follow the end of a block comment). No kernel file has one today.
#
# klab_source_hashes(<code-hash-var> <full-text-hash-var> PREFIX <text> SOURCES <file>... DEVICE
# <file>...): the first 16 hex digits of two SHA-256 hashes, each over the variant's files
# (SOURCES: its .cu file and the kernels/*.hpp headers it includes, in that order), then PREFIX
# (the CUDA architectures, flags and build type), then the harness headers whose code runs on the
# device (DEVICE): the code hash over klab_code_text() of each file, which new tuning records
# carry, and the full-text hash over the files as they are, which records tuned before 2026-11-30
# carry (autotune::SourceHashes accepts either).
#
# tests/cmake/test_source_hash.cmake checks both.
function(klab_code_text out text)
  if(text MATCHES "\\\\[ \t\r]*\n" OR text MATCHES "(^|[^A-Za-z0-9_])(u8|u|U|L)?R\"" OR text MATCHES "(^|\n)[ \t]*//[^\n]*\\*/")
    set(${out} "${text}" PARENT_SCOPE)
    return()
  endif()
  # A newline first, so that the file's first line is matched like the others.
  string(REGEX REPLACE "\n[ \t]*//[^\n]*" "" code "\n${text}")
  # Runs of blank lines (and of lines of spaces) become one line break; then a leading one goes.
  string(REGEX REPLACE "(\n[ \t\r]*)+\n" "\n" code "${code}")
  string(REGEX REPLACE "^\n" "" code "${code}")
  set(${out} "${code}" PARENT_SCOPE)
endfunction()

function(klab_source_hashes code_out full_out)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "PREFIX" "SOURCES;DEVICE")
  set(code "")
  set(full "")
  # The prefix goes between the variant's files and the device headers, as it is, in both hashes.
  set(pieces ${arg_SOURCES} "<prefix>" ${arg_DEVICE})
  foreach(file IN LISTS pieces)
    if(file STREQUAL "<prefix>")
      set(text "${arg_PREFIX}")
      set(file_code "${arg_PREFIX}")
    else()
      file(READ "${file}" text)
      klab_code_text(file_code "${text}")
    endif()
    string(APPEND full "${text}")
    string(APPEND code "${file_code}")
  endforeach()
  string(SHA256 code_sha256 "${code}")
  string(SHA256 full_sha256 "${full}")
  string(SUBSTRING "${code_sha256}" 0 16 code_hash)
  string(SUBSTRING "${full_sha256}" 0 16 full_hash)
  set(${code_out} "${code_hash}" PARENT_SCOPE)
  set(${full_out} "${full_hash}" PARENT_SCOPE)
endfunction()
