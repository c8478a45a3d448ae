#!/usr/bin/env bash
# Installs the Debian packages klab builds with, and nothing when all are present (idempotent).
# The CUDA Toolkit (nvcc) is not a Debian package here: it must already be installed. Packages
# named as arguments are installed too (.ci/run: clang for the fuzz preset, fuzz/README.md).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libpng-dev libjpeg-dev libcli11-dev nlohmann-json3-dev
  python3-dev python3-venv  # the Python package: pip install . (docs/library.md)
  python3-matplotlib        # klab report's plots (scripts/plot_bench.py)
  "$@"
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#packages[@]} Debian packages are installed"
else
  echo "bootstrap: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "bootstrap: nvcc not found. Install NVIDIA's CUDA Toolkit 12.x or 13.x and put its bin/ on PATH." >&2
  exit 1
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "bootstrap: nvcc is in /usr/local/cuda/bin but not on PATH: export PATH=/usr/local/cuda/bin:\$PATH" >&2
  exit 1
fi

# The plots are drawn by the python3 on PATH, which may not be Debian's (pyenv, a virtualenv).
if ! python3 -c "import matplotlib" >/dev/null 2>&1; then
  echo "bootstrap: warning: $(command -v python3) cannot import matplotlib, so klab report draws no plots:" \
    "install it for that python (python3 -m pip install matplotlib) or put /usr/bin first on PATH" >&2
fi

cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if ! printf '3.25.0\n%s\n' "$cmake_version" | sort -V -C; then
  echo "bootstrap: CMake $cmake_version is too old; klab needs 3.25 or newer" >&2
  exit 1
fi
