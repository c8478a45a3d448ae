#!/usr/bin/env python3
"""Throwaway build for the regression gate's evidence (issue 15): makes conv.separable_fused and
sobel.fused do about 10% more work by launching ~10% more blocks along x that recompute (and
rewrite, with identical values) the first tiles of each row. Applied on the GPU machine only;
never committed. Prints what it changed."""
import pathlib, re, sys
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")

def edit(path, pairs):
    p = root / path
    text = p.read_text()
    for old, new in pairs:
        if text.count(old) != 1:
            sys.exit(f"{path}: expected one '{old[:60]}', found {text.count(old)}")
        text = text.replace(old, new)
    p.write_text(text)
    print(f"slowed: {path}")

edit("kernels/conv_separable_fused.cu", [
    ("const int e0 = static_cast<int>(blockIdx.x) * kTileElements;",
     "const int e0 = static_cast<int>(blockIdx.x % ((elements + kTileElements - 1) / kTileElements)) * kTileElements;"),
    ("const dim3 grid(grid_side(s.row_elements(), kTileElements), grid_side(s.height, kTileRows),",
     "const unsigned gx = grid_side(s.row_elements(), kTileElements);\n"
     "        const dim3 grid(gx + std::max(1u, gx / 10), grid_side(s.height, kTileRows),"),
])
edit("kernels/sobel_fused.cu", [
    ("#include <cstddef>\n", "#include <algorithm>\n#include <cstddef>\n"),
    ("const int tile_x0 = static_cast<int>(blockIdx.x) * block_w - 1;",
     "const int bx = static_cast<int>(blockIdx.x) % ((in.shape.width + block_w - 1) / block_w);\n"
     "    const int tile_x0 = bx * block_w - 1;"),
    ("const int x = static_cast<int>(blockIdx.x) * block_w + static_cast<int>(threadIdx.x);",
     "const int x = bx * block_w + static_cast<int>(threadIdx.x);"),
    ("const dim3 grid(grid_side(problem.shape.width, shape.block_x), grid_side(problem.shape.height, out_h));",
     "const unsigned gx = grid_side(problem.shape.width, shape.block_x);\n"
     "        const dim3 grid(gx + std::max(1u, gx / 10), grid_side(problem.shape.height, out_h));"),
])
