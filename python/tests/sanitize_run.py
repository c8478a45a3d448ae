"""One Python run of klab's GPU paths, for compute-sanitizer (scripts/gpu-python.sh):

    compute-sanitizer --tool memcheck --error-exitcode 1 python python/tests/sanitize_run.py

Device arrays (PyTorch where installed, else CuPy) in every layout klab takes, a window with a row
stride, Sobel and integral images, and host arrays through the GPU; each result verified."""

import sys

import numpy as np

import klab


def main() -> int:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (131, 257, 3), dtype=np.uint8)
    klab.filter(a, "gaussian:5", border="mirror", backend="gpu", verify=True)
    klab.integral(a, backend="gpu", verify=True)
    try:
        import torch

        to_device = torch.from_numpy
        move = lambda t: t.cuda()  # noqa: E731
    except ImportError:
        import cupy

        to_device, move = cupy.asarray, lambda c: c  # noqa: E731
    t = move(to_device(a))
    for spec, border in (("gaussian:5", "mirror"), ("box:9", "constant:7"), ("sharpen", "wrap"), ("unsharp:9", "reflect")):
        klab.filter(t, spec, border=border, verify=True)
        klab.filter(t[3:120, 5:250], spec, border=border, verify=True)
    for channels in (1, 4):
        klab.filter(move(to_device(np.ascontiguousarray(rng.integers(0, 256, (97, 65, channels), dtype=np.uint8)))), "box:3",
                    verify=True)
    planar = move(to_device(np.ascontiguousarray(a.transpose(2, 0, 1))))
    klab.filter(planar, "gaussian:7", layout="chw", verify=True)
    klab.sobel(t, verify=True)
    klab.integral(t, verify=True)
    for variant in klab.variants():
        if variant["op"] == "convolve":
            klab.filter(t, "box:5", variant=variant["name"], verify=True)
    print("sanitize_run: every call verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
