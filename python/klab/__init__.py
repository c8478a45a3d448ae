"""klab: image filters on CUDA GPUs, each variant verified against one CPU reference.

    import klab
    out = klab.filter(image, "gaussian:5", border="mirror")   # NumPy: the CPU reference
    out = klab.filter(tensor, "gaussian:5")                    # PyTorch/CuPy on the GPU: in place, no copies
    edges = klab.sobel(tensor)
    sums = klab.integral(tensor)                               # uint32, or uint64 for large images

Images are uint8 arrays with 1, 3 or 4 channels: (H, W) gray, (H, W, C) interleaved (the
default, layout="hwc"), or (C, H, W) planar with layout="chw"; pixels packed, any row stride.
CUDA arrays come through DLPack or __cuda_array_interface__ and are filtered where they are, on
the caller's stream (the array library's current stream unless stream= names one); the call
returns once the result is ready. NumPy arrays run the CPU reference, or with backend="gpu" are
copied through the GPU. Results are new arrays of the input's kind and place, or out=.

docs/library.md in the repository has the full guide; `python -m klab.peers` times klab against
CuPy, PyTorch and OpenCV.
"""

from __future__ import annotations

import numbers
import os

try:
    from . import _klab
except ImportError as error:  # without the compiled module Python blames a circular import
    import pathlib

    if any(pathlib.Path(__path__[0]).glob("_klab*")):  # there, but it does not load: Python's reason stands
        raise
    raise ImportError(f"klab's compiled module (_klab) is not beside this package ({__path__[0]}): install klab with "
                      "`pip install .` from the repository's root (docs/library.md) instead of importing python/klab "
                      "from the checkout") from error

from . import _arrays

__version__ = _klab.__version__
VerificationError = _klab.VerificationError

__all__ = ["filter", "sobel", "integral", "choose", "variants", "devices", "read_image", "write_image",
           "VerificationError", "__version__"]

_LAYOUTS = ("hwc", "chw")
_BACKENDS = (None, "cpu", "gpu")


def filter(a, spec: str, border: str = "replicate", variant: str = "auto", stream=None, *, out=None,
           layout: str = "hwc", backend: str | None = None, verify: bool = False, results: str | None = None,
           threads: int = 0, return_report: bool = False):
    """Filters image `a` with `spec` and returns the result (`out` when given).

    spec: box:K, gaussian:K[:SIGMA], sharpen, laplacian, emboss, unsharp:K[:SIGMA[:AMOUNT]],
        random:K[:SEED] (a random KxK mask, seed 1 by default), mask:FILE, sobel (1 channel out)
        or integral (uint32 sums, uint64 where 255*W*H >= 2^32), as `klab apply --filter` takes
        them.
    border: constant[:V], replicate, mirror (reflect-101), reflect, wrap.
    variant: "auto" (the fastest verified variant of the tuning cache for this GPU and problem,
        else a default) or a name from klab.variants(). GPU only.
    stream: CUDA arrays: the stream to run on (an int handle or a stream object); None takes the
        current stream of the array's library. The call waits for its work before returning.
    out: a writable array for the result: the output's shape and dtype, in the input's place.
    layout: "hwc" (interleaved) or "chw" (planar) for 3-D arrays.
    backend: None (where `a` is), "cpu" (the CPU reference; host arrays) or "gpu" (CUDA arrays in
        place; host arrays copied through the GPU).
    verify: GPU: compare with the CPU reference; a difference raises klab.VerificationError (a
        CUDA out then holds the GPU's result, a host out is unchanged).
    results: the tuning cache's folder (default: $KLAB_RESULTS, else ./results).
    threads: threads of the CPU reference, an int >= 0 (0: one per hardware thread).
    return_report: return (result, report), the report saying which variant ran and why, and the
        addresses of the input and output pixels it ran on.
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec is a {type(spec).__qualname__}; allowed: a filter spec string such as 'gaussian:5'")
    for name, value in (("border", border), ("variant", variant)):
        if not isinstance(value, str):
            raise TypeError(f"{name} is a {type(value).__qualname__}; allowed: a string")
    if layout not in _LAYOUTS:
        raise ValueError(f"layout={layout!r}; allowed: 'hwc' (H, W, C) or 'chw' (C, H, W)")
    if backend not in _BACKENDS:
        raise ValueError(f"backend={backend!r}; allowed: None (where the array is), 'cpu' or 'gpu'")
    if not isinstance(threads, numbers.Integral) or isinstance(threads, bool):  # NumPy's integers too
        raise TypeError(f"threads is a {type(threads).__qualname__}; allowed: an int >= 0 (0: one per hardware thread)")
    threads = int(threads)
    if threads < 0:
        raise ValueError(f"threads={threads!r}; allowed: an int >= 0 (0: one per hardware thread)")
    op = _klab.filter_op(spec)  # a bad spec raises ValueError here, before any work

    on_device = _arrays.device_of(a) is not None
    where = "gpu" if on_device else ("gpu-host" if backend == "gpu" else "cpu")
    if on_device and backend == "cpu":
        raise ValueError("backend='cpu' with a CUDA array; allowed: backend='gpu' or None for CUDA arrays, or a host "
                         "(NumPy) array for the CPU reference")
    if where != "gpu" and stream is not None:
        raise ValueError("stream= with a host array; allowed: stream= with CUDA arrays (host arrays are filtered "
                         "synchronously)")
    if where == "cpu" and (variant != "auto" or verify):
        option = f"variant={variant!r}" if variant != "auto" else "verify=True"
        raise ValueError(f"{option} on the CPU backend: the CPU backend is the reference itself; allowed: "
                         f"backend='gpu' or a CUDA array")
    if where != "cpu" and not _klab.gpu_available():
        raise RuntimeError("klab's GPU path needs a CUDA device, and none was found; allowed: host (NumPy) arrays on "
                           "the CPU reference")

    # Through DLPack with the stream klab runs on: the producer orders its pending work before it.
    handle = _arrays.stream_handle(stream, a) if on_device else 0
    source = _arrays.describe(a, "a", _arrays.dlpack_stream(handle) if on_device else None)
    image = _arrays.as_image(source, "a", layout, "uint8")
    channels = 1 if op == "sobel" else image.channels
    dtype = "uint8"
    if op == "integral":
        dtype = "uint64" if _klab.integral_needs_u64(image.width, image.height) else "uint32"
    shape = _arrays.output_shape(image, len(source.shape), layout, channels)

    result = _arrays.allocate(source, shape, dtype) if out is None else out
    target = _arrays.describe(result, "out", _arrays.dlpack_stream(handle) if on_device else None)
    _check_output(target, source, shape, dtype)
    output = _arrays.as_image(target, "out", layout, dtype, channels=(channels,))
    if output.planar != (image.planar and channels > 1):
        raise ValueError(f"out is {'planar' if output.planar else 'interleaved'}, the result "
                         f"{'planar' if image.planar else 'interleaved'}; allowed: the input's layout")
    for producer in (source.producer_stream, target.producer_stream):
        if on_device and producer is not None and producer != handle:
            _klab.wait_for(handle, producer)  # __cuda_array_interface__ v3: the data is ready there

    device = source.device if on_device and source.device >= 0 else -1
    report = _klab.run(image.image_tuple(), output.image_tuple(), spec, where, border, variant, handle, device,
                       (os.fsencode(results) if results else b""), bool(verify), threads)
    report["input_address"] = source.address
    report["output_address"] = target.address
    return (result, report) if return_report else result


def _check_output(target, source, shape: tuple, dtype: str) -> None:
    if target.device != source.device:
        raise ValueError(f"out is in {target.where}, a in {source.where}; allowed: out where a is")
    if tuple(target.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(target.shape)}; allowed: {tuple(shape)}")
    if target.dtype != dtype:
        raise TypeError(f"out holds {target.dtype}; allowed: {dtype}")
    if not target.writable:
        raise ValueError("out is read-only; allowed: a writable array")


def sobel(a, border: str = "replicate", variant: str = "auto", stream=None, **options):
    """Gradient magnitude of the BT.709 gray image (1 channel out): filter(a, "sobel", ...)."""
    return filter(a, "sobel", border, variant, stream, **options)


def integral(a, variant: str = "auto", stream=None, **options):
    """Summed-area table per channel, uint32 (uint64 where 255*W*H >= 2^32): filter(a, "integral", ...)."""
    return filter(a, "integral", "replicate", variant, stream, **options)


def choose(a, spec: str, border: str = "replicate", variant: str = "auto", *, layout: str = "hwc",
           results: str | None = None) -> dict:
    """Which variant and launch shape the GPU would run `spec` on an image like `a` with, and why."""
    if not _klab.gpu_available():
        raise RuntimeError("klab.choose needs a CUDA device, and none was found")
    source = _arrays.describe(a, "a")
    image = _arrays.as_image(source, "a", layout, "uint8")
    device = source.device if source.device is not None and source.device >= 0 else -1
    return _klab.choose(image.image_tuple(), spec, border, variant, device, (os.fsencode(results) if results else b""))


def variants() -> list:
    """The registered GPU variants: name, op and technique of each."""
    return _klab.variants()


def devices() -> list:
    """The CUDA devices klab sees (empty without one)."""
    return _klab.devices()


def read_image(path: str | bytes | os.PathLike):
    """A PNG, JPEG or PGM/PPM file as a uint8 NumPy array: (H, W) gray, (H, W, C) otherwise.
    Raises the OSError subclass of the file system's error (FileNotFoundError, PermissionError, ...)
    where the file cannot be read, ValueError where it is not an image klab reads."""
    return _klab.read_image(os.fsencode(path))


def write_image(path: str | bytes | os.PathLike, a, jpeg_quality: int | None = None) -> None:
    """Writes a uint8 host array ((H, W) or (H, W, C)) to PNG, JPEG or PGM/PPM, by the extension
    (a .pgm name takes gray only). jpeg_quality: a .jpg or .jpeg file's quality, an int from 1 to
    100 (None: 95); given for another format, where it would change nothing, it is refused.
    Raises the OSError subclass of the file system's error where the file cannot be written (its
    directory missing or not writable, ...); the file is replaced whole or not at all."""
    quality = _klab.default_jpeg_quality()
    if jpeg_quality is not None:
        allowed = "an int from 1 to 100, for a .jpg or .jpeg path"
        if not isinstance(jpeg_quality, numbers.Integral) or isinstance(jpeg_quality, bool):  # NumPy's integers too
            raise TypeError(f"jpeg_quality is a {type(jpeg_quality).__qualname__}; allowed: {allowed}")
        quality = int(jpeg_quality)
        if not 1 <= quality <= 100:
            raise ValueError(f"jpeg_quality={quality!r}; allowed: {allowed}")
        if os.path.splitext(os.fsdecode(path))[1].lower() not in (".jpg", ".jpeg"):
            raise ValueError(f"jpeg_quality={quality!r} for {os.fsdecode(path)!r}, which is not a JPEG name, so it would "
                             f"change nothing; allowed: {allowed}")
    image = _arrays.as_image(_arrays.describe(a, "a"), "a", "hwc", "uint8")
    if image.array.device is not None:
        raise ValueError(f"a is in {image.array.where}; allowed: a host (NumPy) array")
    _klab.write_image(os.fsencode(path), image.image_tuple(), quality)
