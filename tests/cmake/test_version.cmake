# cmake/KlabVersion.cmake: the commit and dirty flag a build records, from git or from
# KLAB_GIT_COMMIT / KLAB_GIT_DIRTY, and its refusal of a named commit the tree differs from. Run by
# CTest as `cmake -P` (label cpu) in a scratch git repository; a failed check stops with
# FATAL_ERROR, which fails the test.
find_program(GIT git)
if(NOT GIT)
  message(FATAL_ERROR "git not found: this test builds a scratch repository with it")
endif()
set(script "${CMAKE_CURRENT_LIST_DIR}/../../cmake/KlabVersion.cmake")
# A scratch repository outside the source tree, whatever the working directory.
if(DEFINED ENV{TMPDIR} AND IS_DIRECTORY "$ENV{TMPDIR}")
  set(scratch "$ENV{TMPDIR}")
else()
  set(scratch "/tmp")
endif()
string(RANDOM LENGTH 8 tag)
set(repo "${scratch}/klab_version_test_${tag}")
set(output "${repo}-version.cpp")
file(REMOVE_RECURSE "${repo}")
file(MAKE_DIRECTORY "${repo}")

function(git)
  execute_process(COMMAND "${GIT}" -C "${repo}" -c user.name=klab -c user.email=klab@example.invalid -c commit.gpgsign=false ${ARGN}
    RESULT_VARIABLE status OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} failed: ${err}")
  endif()
  set(git_out "${out}" PARENT_SCOPE)
endfunction()

# Runs the script with the environment given ("NAME=value" or "--unset=NAME" arguments of cmake -E
# env); sets version_status, version_error and version_text (the file it wrote, or "").
function(write_version)
  file(REMOVE "${output}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${ARGN} "${CMAKE_COMMAND}" -DSOURCE_DIR=${repo} -DOUTPUT=${output} -P "${script}"
    RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE err)
  set(text "")
  if(EXISTS "${output}")
    file(READ "${output}" text)
  endif()
  set(version_status "${status}" PARENT_SCOPE)
  set(version_error "${err}" PARENT_SCOPE)
  set(version_text "${text}" PARENT_SCOPE)
endfunction()

function(expect_version what commit dirty)
  if(NOT version_status EQUAL 0)
    message(FATAL_ERROR "${what}: the script failed: ${version_error}")
  endif()
  string(FIND "${version_text}" "return {\"${commit}\", ${dirty}};" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected {\"${commit}\", ${dirty}} in:\n${version_text}")
  endif()
endfunction()

function(expect_refused what needle)
  if(version_status EQUAL 0)
    message(FATAL_ERROR "${what}: the script succeeded, and should have stopped:\n${version_text}")
  endif()
  # CMake wraps a message's lines: compare with its whitespace runs as single spaces.
  string(REGEX REPLACE "[ \t\r\n]+" " " error_text "${version_error}")
  string(FIND "${error_text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: the error does not say \"${needle}\":\n${version_error}")
  endif()
  if(EXISTS "${output}")
    message(FATAL_ERROR "${what}: a refused build still wrote ${output}")
  endif()
endfunction()

# Two commits: the first with a.txt, an executable run.sh and results/r.json (klab's own output),
# the second with a.txt changed and b.txt added; build/ is ignored.
git(init -q)
file(WRITE "${repo}/.gitignore" "build/\n")
file(WRITE "${repo}/a.txt" "one\n")
file(WRITE "${repo}/run.sh" "#!/bin/sh\n")
file(CHMOD "${repo}/run.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
file(WRITE "${repo}/results/r.json" "{}\n")
git(add .gitignore a.txt run.sh results/r.json)
git(commit -q -m first)
git(rev-parse HEAD)
set(first "${git_out}")
file(WRITE "${repo}/a.txt" "two\n")
file(WRITE "${repo}/b.txt" "new\n")
git(add b.txt)
git(commit -q -a -m second)
git(rev-parse HEAD)
set(second "${git_out}")
git(branch -q named-branch)

# From git, without the environment: HEAD, clean; then dirty once a tracked file changes.
write_version(--unset=KLAB_GIT_COMMIT --unset=KLAB_GIT_DIRTY)
expect_version("git, clean tree" "${second}" false)

# Named: the commit the tree is at.
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_version("KLAB_GIT_COMMIT at the tree's commit" "${second}" false)

# Named: an older commit that this .git holds, the tree being another (a copy's stale HEAD).
write_version(KLAB_GIT_COMMIT=${first} --unset=KLAB_GIT_DIRTY)
expect_refused("KLAB_GIT_COMMIT of another commit" "differs from that commit in 2 file(s): a.txt, b.txt (not in the commit).")
write_version(KLAB_GIT_COMMIT=${first} KLAB_GIT_DIRTY=1)
expect_version("KLAB_GIT_COMMIT of another commit, KLAB_GIT_DIRTY=1" "${first}" true)

# Named by a branch: recorded as the commit's hash.
write_version(KLAB_GIT_COMMIT=named-branch --unset=KLAB_GIT_DIRTY)
expect_version("KLAB_GIT_COMMIT a branch" "${second}" false)

# What does not count: klab's own results/, a file mode a copy dropped, an ignored build folder.
file(WRITE "${repo}/results/r.json" "{\"written\": \"by klab run\"}\n")
file(CHMOD "${repo}/run.sh" PERMISSIONS OWNER_READ OWNER_WRITE)
file(WRITE "${repo}/build/out.o" "object\n")
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_version("results/ rewritten, a mode dropped, build/ written" "${second}" false)
git(checkout -q -- run.sh)
write_version(--unset=KLAB_GIT_COMMIT --unset=KLAB_GIT_DIRTY)
expect_version("git, results/ rewritten" "${second}" false)

# A copy whose .git holds the named commit but whose HEAD and index are an older one (a stale copy
# of a newer tree): the tree is the named commit's, so it builds clean; HEAD would be refused.
git(reset -q --mixed ${first})
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_version("a stale index, the tree at the named commit" "${second}" false)
write_version(KLAB_GIT_COMMIT=${first} --unset=KLAB_GIT_DIRTY)
expect_refused("a stale index, HEAD named" "b.txt (not in the commit)")
git(reset -q --mixed ${second})

# Named: a commit this .git does not hold (newer than a stale copy): taken as named.
write_version(KLAB_GIT_COMMIT=0123456789abcdef0123456789abcdef01234567 --unset=KLAB_GIT_DIRTY)
expect_version("KLAB_GIT_COMMIT unknown to .git" "0123456789abcdef0123456789abcdef01234567" false)

# A modified tree: dirty from git; refused when named clean; dirty when said so.
file(WRITE "${repo}/a.txt" "three\n")
write_version(--unset=KLAB_GIT_COMMIT --unset=KLAB_GIT_DIRTY)
expect_version("git, modified tree" "${second}" true)
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_refused("KLAB_GIT_COMMIT of a modified tree" "KLAB_GIT_DIRTY=1 for a modified tree")
write_version(KLAB_GIT_COMMIT=${second} KLAB_GIT_DIRTY=1)
expect_version("KLAB_GIT_COMMIT of a modified tree, KLAB_GIT_DIRTY=1" "${second}" true)
git(checkout -q -- a.txt)

# A new file git does not ignore (a kernel not yet committed is compiled in): refused when named.
file(WRITE "${repo}/new.cu" "int k;\n")
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_refused("an untracked file" "in 1 file(s): new.cu (not in the commit)")
write_version(--unset=KLAB_GIT_COMMIT --unset=KLAB_GIT_DIRTY)
expect_version("git, an untracked file" "${second}" true)

# More than five files: five named, and the list says it goes on.
foreach(i RANGE 1 6)
  file(WRITE "${repo}/extra${i}.txt" "${i}\n")
endforeach()
write_version(KLAB_GIT_COMMIT=${second} --unset=KLAB_GIT_DIRTY)
expect_refused("seven files" "in 7 file(s): ")
expect_refused("seven files" ", ...")

file(REMOVE_RECURSE "${repo}")
file(REMOVE "${output}")
message(STATUS "KlabVersion.cmake: all checks passed")
