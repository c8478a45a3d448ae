# klab_code_text() and klab_source_hashes() (cmake/KlabSourceHash.cmake): what a variant's source
# hashes cover. Run by CTest as `cmake -P` (label cpu); a failed check stops with FATAL_ERROR, which
# fails the test.
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/KlabSourceHash.cmake")

set(checks 0)
function(expect_same what a b)
  klab_code_text(ca "${a}")
  klab_code_text(cb "${b}")
  if(NOT ca STREQUAL cb)
    message(FATAL_ERROR "${what}: the code texts differ, and should not:\n[${ca}]\n[${cb}]")
  endif()
endfunction()
function(expect_different what a b)
  klab_code_text(ca "${a}")
  klab_code_text(cb "${b}")
  if(ca STREQUAL cb)
    message(FATAL_ERROR "${what}: the code texts are equal, and should not be:\n[${ca}]")
  endif()
endfunction()

set(base "// conv.example — a preamble\n// of two lines\n#include <cstdint>\n\nint f(int x) {\n    // why\n    return x + 1;  // a trailing comment\n}\n")

# Comment-only and blank lines do not count.
expect_same("a preamble line reworded" "${base}"
  "// conv.example — a preamble, reworded\n// of two lines\n#include <cstdint>\n\nint f(int x) {\n    // why\n    return x + 1;  // a trailing comment\n}\n")
expect_same("a comment line added, indented" "${base}"
  "// conv.example — a preamble\n// of two lines\n// and a third\n#include <cstdint>\n\nint f(int x) {\n    // why, and how\n    //   in detail\n    return x + 1;  // a trailing comment\n}\n")
expect_same("blank lines added and removed" "${base}"
  "// conv.example — a preamble\n// of two lines\n\n#include <cstdint>\nint f(int x) {\n\n  \n    // why\n    return x + 1;  // a trailing comment\n}\n")
expect_same("a file that starts with a comment line" "// first\nint a;\n" "// first, changed\nint a;\n")
expect_same("semicolons in comments and code" "// a; b; c\nint a; int b;\n" "// a;b\nint a; int b;\n")

# Code counts, and so does everything on a line that holds code.
expect_different("an edit of code" "${base}"
  "// conv.example — a preamble\n// of two lines\n#include <cstdint>\n\nint f(int x) {\n    // why\n    return x + 2;  // a trailing comment\n}\n")
expect_different("a trailing comment" "int a;  // one\n" "int a;  // two\n")
expect_different("a // inside a string on a code line" "const char* s = \"a//b\";\n" "const char* s = \"a//c\";\n")
expect_different("a /* */ comment" "int f(int /*x*/);\n" "int f(int /*y*/);\n")
expect_different("indentation of code" "int a;\n" "  int a;\n")
expect_different("a line break inside code" "int a; int b;\n" "int a;\nint b;\n")

# A file where dropping a whole line could hide code counts whole: a line continued by a backslash
# (a comment line or a blank line after it may be spliced into code), a raw string literal, and a
# comment-only line that ends a block comment.
expect_different("a comment line after a continued line" "#define X a \\\n// end\nint y;\n" "#define X a \\\nint y;\n")
expect_different("a blank line after a continued line" "#define X a \\\n\nint y;\n" "#define X a \\\nint y;\n")
expect_different("a comment line that continues" "// note \\\nint y;\n" "// note\nint y;\n")
expect_different("a raw string" "const char* s = R\"(\n// kept\n)\";\n" "const char* s = R\"(\n// gone\n)\";\n")
expect_different("code after a block comment's end" "/* a\n// b */ int x = 1;\n" "/* a\n// b */ int x = 2;\n")
# ... and only those: a string that ends in R is no raw string.
expect_same("a string ending in R" "// one\nconst char* s = \"BAR\";\n" "// two\nconst char* s = \"BAR\";\n")

# klab_source_hashes(): the full-text hash is the SHA-256 of the files' text as the build used to
# hash it (the variant's files, the prefix, the device headers), which the committed tuning records
# carry; the code hash the same over klab_code_text() of each file.
set(dir "${CMAKE_CURRENT_BINARY_DIR}/klab_source_hash_test")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}")
set(cu "// a variant\nint f() { return 1; }  // one\n")
set(hpp "// a header\n\nint g();\n")
set(dev "// a device header\nint h();\n")
file(WRITE "${dir}/v.cu" "${cu}")
file(WRITE "${dir}/v.hpp" "${hpp}")
file(WRITE "${dir}/d.hpp" "${dev}")
set(prefix "80;90|-lineinfo|Release|")
klab_source_hashes(code_hash full_hash PREFIX "${prefix}" SOURCES "${dir}/v.cu" "${dir}/v.hpp" DEVICE "${dir}/d.hpp")
string(SHA256 expected_full "${cu}${hpp}${prefix}${dev}")
string(SUBSTRING "${expected_full}" 0 16 expected_full)
klab_code_text(cu_code "${cu}")
klab_code_text(hpp_code "${hpp}")
klab_code_text(dev_code "${dev}")
string(SHA256 expected_code "${cu_code}${hpp_code}${prefix}${dev_code}")
string(SUBSTRING "${expected_code}" 0 16 expected_code)
if(NOT full_hash STREQUAL expected_full)
  message(FATAL_ERROR "klab_source_hashes: full-text hash ${full_hash}, expected ${expected_full}")
endif()
if(NOT code_hash STREQUAL expected_code)
  message(FATAL_ERROR "klab_source_hashes: code hash ${code_hash}, expected ${expected_code}")
endif()
# A comment edit moves the full-text hash only; a code edit moves both.
file(WRITE "${dir}/v.hpp" "// a header, reworded\n\nint g();\n")
klab_source_hashes(code_after_comment full_after_comment PREFIX "${prefix}" SOURCES "${dir}/v.cu" "${dir}/v.hpp" DEVICE "${dir}/d.hpp")
file(WRITE "${dir}/d.hpp" "// a device header\nint h(int);\n")
klab_source_hashes(code_after_code full_after_code PREFIX "${prefix}" SOURCES "${dir}/v.cu" "${dir}/v.hpp" DEVICE "${dir}/d.hpp")
file(REMOVE_RECURSE "${dir}")
if(NOT code_after_comment STREQUAL code_hash OR full_after_comment STREQUAL full_hash)
  message(FATAL_ERROR "klab_source_hashes: a comment edit gave code ${code_after_comment} (was ${code_hash}), full ${full_after_comment}")
endif()
if(code_after_code STREQUAL code_after_comment OR full_after_code STREQUAL full_after_comment)
  message(FATAL_ERROR "klab_source_hashes: a code edit left a hash unchanged")
endif()

message(STATUS "klab_code_text and klab_source_hashes: every check passed")
