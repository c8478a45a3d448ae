"""The klab package on the GPU (skipped without a CUDA device, or without PyTorch / CuPy): tensors
filtered where they are (zero copies, checked by pointer), results verified against the CPU
reference by klab's rule (verify=True; exact for Sobel and integral images), the caller's stream
honoured, and bad GPU input refused with TypeError or ValueError."""

import numpy as np
import pytest

import klab
from conftest import ROOT

pytestmark = pytest.mark.skipif(not klab.devices(), reason="no CUDA device")

RESULTS = str(ROOT / "results")  # the committed tuning caches: `auto` picks from them on a tuned GPU


def image(height=287, width=509, channels=3, seed=1):
    shape = (height, width) if channels == 0 else (height, width, channels)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy")


SPECS = [("gaussian:5", "mirror"), ("box:9", "replicate"), ("sharpen", "wrap"), ("unsharp:7", "reflect"), ("box:31", "constant:3")]


@pytest.mark.parametrize("channels", [0, 1, 3, 4])
@pytest.mark.parametrize("spec,border", SPECS)
def test_torch_tensors_in_place_and_verified(torch, spec, border, channels):
    a = image(channels=channels)
    t = torch.from_numpy(a).cuda()
    result, report = klab.filter(t, spec, border=border, verify=True, results=RESULTS, return_report=True)
    assert isinstance(result, torch.Tensor) and result.device == t.device and result.shape == t.shape
    assert report["input_address"] == t.data_ptr() and report["output_address"] == result.data_ptr()
    assert report["verification"].startswith("ok"), report
    # Within klab's rule of the CPU reference: equal, or 1 apart next to an fp32 rounding tie.
    assert np.abs(result.cpu().numpy().astype(int) - klab.filter(a, spec, border=border)).max() <= 1


def test_out_tensor_is_written_in_place(torch):
    t = torch.from_numpy(image()).cuda()
    out = torch.empty_like(t)
    result, report = klab.filter(t, "gaussian:3", out=out, return_report=True)
    assert result is out and report["output_address"] == out.data_ptr()


def test_windows_planar_tensors_and_row_strides(torch):
    a = image(300, 520, 3)
    big = torch.from_numpy(a).cuda()
    window = big[7:290, 5:511]  # a pointer inside a row, the big image's row stride
    expected = klab.filter(np.ascontiguousarray(a[7:290, 5:511]), "gaussian:7", border="mirror")
    result, report = klab.filter(window, "gaussian:7", border="mirror", verify=True, return_report=True)
    assert report["input_address"] == window.data_ptr()
    assert np.abs(result.cpu().numpy().astype(int) - expected).max() <= 1
    planar = big.permute(2, 0, 1).contiguous()
    result = klab.filter(planar, "gaussian:7", border="mirror", layout="chw", verify=True)
    assert result.shape == planar.shape
    expected = klab.filter(a, "gaussian:7", border="mirror")
    assert np.abs(result.permute(1, 2, 0).cpu().numpy().astype(int) - expected).max() <= 1


@pytest.mark.parametrize("channels", [0, 3, 4])
def test_sobel_and_integral_are_exact(torch, channels):
    a = image(channels=channels)
    t = torch.from_numpy(a).cuda()
    edges = klab.sobel(t, border="mirror", verify=True)
    assert np.array_equal(edges.cpu().numpy(), klab.sobel(a, border="mirror"))
    sums = klab.integral(t, verify=True)
    assert sums.dtype == torch.uint32
    assert np.array_equal(np.from_dlpack(sums.cpu()), klab.integral(a))  # (PyTorch's uint32 has few operations)


def test_large_integral_is_uint64(torch):
    t = torch.full((4104, 4105), 255, dtype=torch.uint8, device="cuda")
    sums = klab.integral(t)
    assert sums.dtype == torch.uint64
    assert int(np.from_dlpack(sums.cpu())[-1, -1]) == 255 * 4104 * 4105


def test_cupy_arrays_in_place_and_verified(cupy):
    a = image()
    c = cupy.asarray(a)
    result, report = klab.filter(c, "gaussian:5", border="mirror", verify=True, return_report=True)
    assert isinstance(result, cupy.ndarray) and result.shape == c.shape
    assert report["input_address"] == c.data.ptr and report["output_address"] == result.data.ptr
    out = cupy.empty((a.shape[0], a.shape[1], 1), dtype=cupy.uint8)
    assert klab.sobel(c, out=out) is out
    assert np.array_equal(cupy.asnumpy(out)[:, :, 0], klab.sobel(a)[:, :, 0])


class InterfaceOnly:
    """A CUDA array offering __cuda_array_interface__ alone (as Numba's do), over a tensor."""

    def __init__(self, tensor, stream=None):
        self.tensor = tensor
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        interface = dict(self.tensor.__cuda_array_interface__)
        interface["version"] = 3
        interface["stream"] = self.stream
        return interface


def test_cuda_array_interface_arrays(torch):
    a = image()
    t = torch.from_numpy(a).cuda()
    torch.cuda.synchronize()
    with pytest.raises(TypeError, match="out="):
        klab.filter(InterfaceOnly(t), "box:3")
    out = torch.empty_like(t)
    result, report = klab.filter(InterfaceOnly(t), "box:3", out=InterfaceOnly(out), verify=True, return_report=True)
    assert report["input_address"] == t.data_ptr() and report["output_address"] == out.data_ptr()
    assert report["verification"].startswith("ok")


def test_numpy_arrays_through_the_gpu():
    a = image(channels=4)
    result, report = klab.filter(a, "gaussian:9", border="reflect", backend="gpu", verify=True, return_report=True)
    assert isinstance(result, np.ndarray) and report["verification"].startswith("ok")
    assert np.abs(result.astype(int) - klab.filter(a, "gaussian:9", border="reflect")).max() <= 1
    sums = klab.integral(a, backend="gpu", verify=True)
    assert np.array_equal(sums, klab.integral(a))


def stale_then_fresh(torch, stream, a):
    """On `stream`: a long wait, then the real pixels copied over a stale (zero) tensor. A first
    call beforehand makes klab's device mask and PyTorch's cached output block, so that no
    allocation (which may synchronise the device) happens in the call under test."""
    t = torch.zeros(a.shape, dtype=torch.uint8, device="cuda")
    klab.filter(t, "box:5")
    source = torch.from_numpy(a).pin_memory()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU cycles
        t.copy_(source, non_blocking=True)
    return t


def test_the_current_torch_stream_is_honoured(torch):
    a = image()
    expected = klab.filter(a, "box:5")
    stream = torch.cuda.Stream()  # not the default stream, and not synchronised with it
    t = stale_then_fresh(torch, stream, a)
    with torch.cuda.stream(stream):
        result = klab.filter(t, "box:5")  # stream=None: torch's current stream
    assert np.array_equal(result.cpu().numpy(), expected)


def test_an_explicit_stream_is_honoured(torch):
    a = image()
    expected = klab.filter(a, "box:5")
    stream = torch.cuda.Stream()
    t = stale_then_fresh(torch, stream, a)
    result = klab.filter(t, "box:5", stream=stream)  # a torch.cuda.Stream object
    assert np.array_equal(result.cpu().numpy(), expected)
    t = stale_then_fresh(torch, stream, a)
    result = klab.filter(t, "box:5", stream=stream.cuda_stream)  # the raw handle
    assert np.array_equal(result.cpu().numpy(), expected)


def test_the_current_cupy_stream_is_honoured(cupy):
    a = image()
    expected = klab.filter(a, "box:5")
    spin = cupy.RawKernel(r"""
        extern "C" __global__ void spin(long long cycles) {
            const long long start = clock64();
            while (clock64() - start < cycles) {}
        }""", "spin")
    c = cupy.zeros(a.shape, dtype=cupy.uint8)
    staged = cupy.cuda.alloc_pinned_memory(a.nbytes)
    pinned = np.frombuffer(staged, np.uint8, a.size).reshape(a.shape)
    pinned[...] = a
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        klab.filter(c, "box:5")  # the device mask and CuPy's output block, made before the test
    cupy.cuda.Device().synchronize()
    with stream:
        spin((1,), (1,), (np.int64(200_000_000),))  # about 0.1 s, then the real pixels
        c.set(pinned, stream=stream)
        result = klab.filter(c, "box:5")  # stream=None: CuPy's current stream
    assert np.array_equal(cupy.asnumpy(result), expected)


def test_auto_uses_the_tuning_cache(torch):
    t = torch.from_numpy(image(1080, 1920, 3)).cuda()
    report = klab.choose(t, "gaussian:5", "replicate", results=RESULTS)
    assert report["variant"] and report["shape"]
    assert any(note.startswith("auto:") for note in report["notes"]), report["notes"]


def gpu_raises(kind, fragment, *args, **kwargs):
    with pytest.raises(kind) as caught:
        klab.filter(*args, **kwargs)
    assert fragment in str(caught.value), str(caught.value)


def test_bad_gpu_input_raises_with_what_is_allowed(torch):
    t = torch.from_numpy(image()).cuda()
    gpu_raises(TypeError, "allowed: uint8", t.float(), "box:3")
    gpu_raises(ValueError, "2 channels", t[:, :, :2], "box:3")
    gpu_raises(ValueError, "pixels are 6 bytes apart", t[:, ::2], "box:3")
    gpu_raises(ValueError, "overlap", t, "box:3", out=t)
    gpu_raises(ValueError, "out is in host memory", t, "box:3", out=np.empty(t.shape, np.uint8))
    gpu_raises(ValueError, "backend='cpu'", t, "box:3", backend="cpu")
    gpu_raises(ValueError, "variant=sobel.fused computes sobel", t, "box:3", variant="sobel.fused")
    gpu_raises(ValueError, "no variant named", t, "box:3", variant="conv.fast")
    gpu_raises(TypeError, "stream is a", t, "box:3", stream="default")
    # A tensor that requires gradients refuses the export (uint8 tensors cannot require them).
    gpu_raises(TypeError, "detach", torch.zeros((8, 8, 3), device="cuda", requires_grad=True), "box:3")
