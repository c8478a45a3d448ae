# klab_code_text() (cmake/KlabSourceHash.cmake): what a variant's source hash covers. Run by CTest
# as `cmake -P` (label cpu); a failed check stops with FATAL_ERROR, which fails the test.
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

message(STATUS "klab_code_text: every check passed")
