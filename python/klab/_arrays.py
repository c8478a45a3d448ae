"""Arrays as klab sees them: where their pixels are, how they are laid out, and checks that say
what is wrong and what is allowed before anything runs.

Host arrays are NumPy arrays (or CPU tensors, read through NumPy). CUDA arrays are read through
DLPack (``__dlpack__``: PyTorch, CuPy, JAX, ...) or, for objects without it,
``__cuda_array_interface__`` (Numba, ...): their pixels are used in place, never copied.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import _klab

# DLPack device types (dlpack.h): the two klab reads.
_DLPACK_CPU = 1
_DLPACK_CUDA = 2

_ALLOWED_ARRAYS = (
    "a NumPy array, or a CUDA array with __dlpack__ or __cuda_array_interface__ (PyTorch, CuPy, ...)"
)


@dataclasses.dataclass
class Array:
    """One array's memory: ``address`` of element 0, ``shape``, ``strides`` in bytes."""

    obj: object  # the caller's object: kept alive for the call
    kind: str  # "numpy", "torch", "cupy", or "other"
    address: int
    shape: tuple
    strides: tuple
    dtype: str  # "uint8", "uint32", ...
    device: int | None  # the CUDA device, None for host memory
    writable: bool = True
    producer_stream: int | None = None  # __cuda_array_interface__ v3: where the data is ready

    @property
    def where(self) -> str:
        return "host memory" if self.device is None else f"cuda:{self.device}"


@dataclasses.dataclass
class Image:
    """An array read as an image: what klab._klab takes (see image_tuple)."""

    array: Array
    width: int
    height: int
    channels: int
    planar: bool  # CHW (SoA): planes height * pitch apart
    pitch: int  # bytes between rows
    element_bytes: int

    def image_tuple(self) -> tuple:
        return (self.array.address, self.width, self.height, self.channels, self.planar, self.pitch, self.element_bytes)


def kind_of(obj) -> str:
    module = type(obj).__module__.split(".")[0]
    return module if module in ("numpy", "torch", "cupy") else "other"


def _numpy_array(obj, kind: str) -> Array:
    interface = obj.__array_interface__
    return Array(obj, kind, interface["data"][0], tuple(obj.shape), tuple(obj.strides), obj.dtype.name, None,
                 writable=bool(obj.flags.writeable))


def _host_view(obj, name: str):
    """A CPU array of another library as a NumPy array over the same memory."""
    try:
        if kind_of(obj) == "torch":
            return obj.numpy()  # writable, unlike some np.from_dlpack results
        return np.from_dlpack(obj)
    except (RuntimeError, TypeError, BufferError) as error:
        raise TypeError(f"{name}: this CPU array cannot be read without a copy ({error}); allowed: "
                        f"{_ALLOWED_ARRAYS}") from error


def _device_id(obj, fallback: int) -> int:
    kind = kind_of(obj)
    if kind == "torch":
        return obj.device.index
    if kind == "cupy":
        return obj.device.id
    return fallback


def describe(obj, name: str, dlpack_stream: int | None = None) -> Array:
    """Reads `obj`'s memory. `dlpack_stream` is handed to a CUDA array's __dlpack__ so that its
    producer orders its pending work before that stream (1: the legacy default stream)."""
    kind = kind_of(obj)
    if isinstance(obj, np.ndarray):
        return _numpy_array(obj, "numpy")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type, device_id = obj.__dlpack_device__()
        if int(device_type) == _DLPACK_CPU:
            return dataclasses.replace(_numpy_array(_host_view(obj, name), kind), obj=obj)
        if int(device_type) != _DLPACK_CUDA:
            raise ValueError(f"{name} is on a DLPack device of type {int(device_type)}; allowed: {_ALLOWED_ARRAYS}")
        try:
            try:
                capsule = obj.__dlpack__(stream=dlpack_stream)
            except TypeError:  # a producer that takes no stream
                capsule = obj.__dlpack__()
            address, shape, strides, dtype, _, _ = _klab.array_info(capsule)
        except (RuntimeError, TypeError, BufferError) as error:
            raise TypeError(f"{name}: its DLPack export failed ({error}); allowed: {_ALLOWED_ARRAYS}") from error
        return Array(obj, kind, address, tuple(shape), tuple(strides), dtype, _device_id(obj, int(device_id)))
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_array_interface(obj, name, kind)
    if hasattr(obj, "__array_interface__"):
        return dataclasses.replace(_numpy_array(np.asarray(obj), kind), obj=obj)
    raise TypeError(f"{name} is a {type(obj).__module__}.{type(obj).__qualname__}; allowed: {_ALLOWED_ARRAYS}")


def _from_cuda_array_interface(obj, name: str, kind: str) -> Array:
    interface = obj.__cuda_array_interface__
    if interface.get("mask") is not None:
        raise ValueError(f"{name} is a masked array; allowed: arrays without a mask")
    address, read_only = interface["data"]
    shape = tuple(interface["shape"])
    dtype = np.dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], dtype.itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    stream = interface.get("stream")
    # The interface names no device: the pixels must be on the current one (klab checks).
    return Array(obj, kind, address, shape, tuple(strides), dtype.name, _device_id(obj, -1), writable=not read_only,
                 producer_stream=stream)


def as_image(array: Array, name: str, layout: str, dtype: str, channels=(1, 3, 4)) -> Image:
    """The image `array` holds: 2-D (H, W) gray, or 3-D (H, W, C) for layout "hwc" or (C, H, W)
    for "chw"; pixels and channels packed, any row stride."""
    if array.dtype != dtype:
        raise TypeError(f"{name} holds {array.dtype}; allowed: {dtype}")
    item = np.dtype(dtype).itemsize
    shape, strides = array.shape, array.strides
    if len(shape) == 2:
        (height, width), (row, pixel), channel, plane = shape, strides, item, None
        count = 1
    elif len(shape) == 3 and layout == "hwc":
        (height, width, count), (row, pixel, channel), plane = shape, strides, None
    elif len(shape) == 3 and layout == "chw":
        (count, height, width), (plane, row, pixel), channel = shape, strides, None
    else:
        raise ValueError(f"{name} has shape {shape}; allowed: (H, W) gray, (H, W, C) with layout='hwc', "
                         f"(C, H, W) with layout='chw'")
    if count not in channels:
        allowed = ", ".join(str(c) for c in channels)
        raise ValueError(f"{name} has {count} channels (shape {shape}); allowed: {allowed}")
    if height < 1 or width < 1:
        raise ValueError(f"{name} is empty (shape {shape}); allowed: at least 1x1 pixels")
    planar = layout == "chw" and count > 1 and len(shape) == 3
    packed = item if planar else item * count  # bytes from one pixel to the next
    # Strides of extent-1 dimensions carry no information (PyTorch reports anything there).
    if width > 1 and pixel != packed:
        raise ValueError(f"{name}'s pixels are {pixel} bytes apart (strides {strides}); allowed: {packed} "
                         f"(pixels and channels packed within a row; any row stride)")
    if channel is not None and count > 1 and channel != item:
        raise ValueError(f"{name}'s channels are {channel} bytes apart (strides {strides}); allowed: {item} "
                         f"(interleaved HWC), or layout='chw' for planar CHW")
    row_bytes = width * packed
    pitch = row if height > 1 else row_bytes
    if pitch < row_bytes or pitch % item != 0:
        raise ValueError(f"{name}'s rows are {row} bytes apart (strides {strides}); allowed: at least the "
                         f"{row_bytes} bytes of a row, a multiple of {item}, increasing")
    if planar and plane != height * pitch:
        raise ValueError(f"{name}'s planes are {plane} bytes apart (strides {strides}); allowed: "
                         f"height x row stride = {height * pitch} (planes stacked without gaps)")
    return Image(array, width, height, count, planar, pitch, item)


def output_shape(image: Image, ndim: int, layout: str, channels: int) -> tuple:
    """The shape of the result of `image` with `channels` channels, in the input's form."""
    if ndim == 2:
        return (image.height, image.width)
    if layout == "chw":
        return (channels, image.height, image.width)
    return (image.height, image.width, channels)


def allocate(like: Array, shape: tuple, dtype: str):
    """A new array of `like`'s kind and place (a NumPy array for a host object of another library;
    a CUDA array of another library raises TypeError: out= is needed)."""
    if like.kind == "numpy" or (like.device is None and like.kind == "other"):
        return np.empty(shape, dtype=dtype)
    if like.kind == "torch":
        import torch

        torch_dtype = getattr(torch, dtype, None)
        if torch_dtype is None:
            raise TypeError(f"this PyTorch has no {dtype} tensors; allowed: out= (an array of shape {shape}, {dtype})")
        return torch.empty(shape, dtype=torch_dtype, device=like.obj.device)
    if like.kind == "cupy":
        import cupy

        with cupy.cuda.Device(like.device):
            return cupy.empty(shape, dtype=dtype)
    raise TypeError(f"klab cannot make a new {type(like.obj).__qualname__}; allowed: out= (a writable array of "
                    f"shape {shape}, {dtype}, in {like.where})")


def device_of(obj) -> int | None:
    """The CUDA device `obj` lives on (-1: the current one, for __cuda_array_interface__ arrays,
    which name none), None for host memory; nothing is exported to find out."""
    if isinstance(obj, np.ndarray):
        return None
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type, device_id = obj.__dlpack_device__()
        return _device_id(obj, int(device_id)) if int(device_type) == _DLPACK_CUDA else None
    if hasattr(obj, "__cuda_array_interface__"):
        return _device_id(obj, -1)
    return None


def stream_handle(stream, obj) -> int:
    """The cudaStream_t to run on for CUDA array `obj`, as an integer (0: the legacy default stream).

    None: the current stream of the array's library (PyTorch's torch.cuda.current_stream(), CuPy's
    cupy.cuda.get_current_stream()), else the stream a __cuda_array_interface__ names, else 0.
    Otherwise an int, or an object with __cuda_stream__ (the CUDA stream protocol), .cuda_stream
    (torch.cuda.Stream) or .ptr (cupy.cuda.Stream).
    """
    if stream is None:
        kind = kind_of(obj)
        if kind == "torch":
            import torch

            return int(torch.cuda.current_stream(obj.device).cuda_stream)
        if kind == "cupy":
            import cupy

            with cupy.cuda.Device(obj.device.id):
                return int(cupy.cuda.get_current_stream().ptr)
        if not hasattr(obj, "__dlpack__") and hasattr(obj, "__cuda_array_interface__"):
            producer = obj.__cuda_array_interface__.get("stream")
            if producer is not None:
                return int(producer)  # 1 and 2 are CUDA's legacy and per-thread default streams
        return 0
    if isinstance(stream, bool):
        raise TypeError(f"stream={stream!r}; allowed: None, a cudaStream_t as an int, or a stream object")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream={stream}; allowed: a cudaStream_t handle (>= 0)")
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    raise TypeError(f"stream is a {type(stream).__qualname__}; allowed: None, a cudaStream_t as an int, or a stream "
                    f"object (__cuda_stream__, torch.cuda.Stream, cupy.cuda.Stream)")


def dlpack_stream(stream: int) -> int:
    """The consumer stream as DLPack writes it: 1 for the legacy default stream."""
    return 1 if stream == 0 else stream
