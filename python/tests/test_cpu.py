"""The klab package without a GPU: the module imports and holds every kernel, the CPU path equals
`klab apply --backend cpu` byte for byte, and bad input raises TypeError or ValueError saying what
was wrong and what is allowed (a file the file system refuses: the OSError of its errno)."""

import errno
import importlib.metadata
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import klab
from conftest import ROOT


def image(height=37, width=53, channels=3, seed=1):
    shape = (height, width) if channels == 0 else (height, width, channels)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert klab.__version__ == re.search(r"project\(klab VERSION ([0-9.]+)", cmake).group(1)
    assert importlib.metadata.version("klab") == klab.__version__


def test_the_checkouts_package_without_its_compiled_module_says_how_to_install(tmp_path):
    # Imported from the checkout (python/klab, no _klab beside it): not Python's "circular import".
    result = subprocess.run([sys.executable, "-c", "import klab"], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert result.returncode != 0
    assert "klab's compiled module (_klab) is not beside this package" in result.stderr
    assert "pip install ." in result.stderr


def test_every_kernel_file_is_registered():
    stems = sorted(p.stem.replace("_", ".", 1) for p in (ROOT / "kernels").glob("*.cu"))
    assert sorted(v["name"] for v in klab.variants()) == stems
    assert {v["op"] for v in klab.variants()} == {"convolve", "sobel", "integral"}


def test_read_and_write_image_round_trip(tmp_path):
    for channels in (0, 3, 4):
        a = image(channels=channels)
        klab.write_image(tmp_path / "a.png", a)
        b = klab.read_image(tmp_path / "a.png")
        assert b.shape == a.shape and b.dtype == np.uint8
        assert np.array_equal(a, b)
    # Paths as str, bytes and os.PathLike alike, a name that is not UTF-8 too (bytes, or a str with
    # the file system's escapes).
    klab.write_image(os.fsencode(tmp_path / "b.png"), a)
    assert np.array_equal(klab.read_image(os.fsencode(tmp_path / "b.png")), a)
    assert np.array_equal(klab.read_image(str(tmp_path / "b.png")), a)
    odd = os.fsencode(tmp_path) + b"/c_\xff.png"
    klab.write_image(odd, a)
    assert np.array_equal(klab.read_image(odd), a)
    assert np.array_equal(klab.read_image(os.fsdecode(odd)), a)
    with pytest.raises(TypeError):
        klab.read_image(7)


def test_write_image_takes_a_jpeg_quality(tmp_path):
    a = image(channels=3)
    klab.write_image(tmp_path / "default.jpg", a)
    klab.write_image(tmp_path / "q95.jpg", a, jpeg_quality=np.int64(95))
    klab.write_image(tmp_path / "q10.jpg", a, jpeg_quality=10)
    assert (tmp_path / "default.jpg").read_bytes() == (tmp_path / "q95.jpg").read_bytes()
    assert (tmp_path / "q10.jpg").stat().st_size < (tmp_path / "q95.jpg").stat().st_size
    assert klab.read_image(tmp_path / "q10.jpg").shape == a.shape
    with pytest.raises(ValueError, match="jpeg_quality=0; allowed: an int from 1 to 100"):
        klab.write_image(tmp_path / "bad.jpg", a, jpeg_quality=0)
    with pytest.raises(TypeError, match="jpeg_quality is a float"):
        klab.write_image(tmp_path / "bad.jpg", a, jpeg_quality=80.0)
    with pytest.raises(ValueError, match="not a JPEG name, so it would change nothing"):
        klab.write_image(tmp_path / "bad.png", a, jpeg_quality=80)
    assert not (tmp_path / "bad.jpg").exists() and not (tmp_path / "bad.png").exists()


def test_file_system_errors_are_oserrors(tmp_path):
    # The subclass of the errno, as open() raises them, so that `except FileNotFoundError` works.
    with pytest.raises(FileNotFoundError, match="cannot open '.*missing.png' for reading") as missing:
        klab.read_image(tmp_path / "missing.png")
    assert missing.value.errno == errno.ENOENT
    with pytest.raises(IsADirectoryError):
        klab.read_image(tmp_path)
    # A name that is not UTF-8 (Linux allows any bytes) is quoted with escapes, not a UnicodeDecodeError.
    with pytest.raises(FileNotFoundError, match=r"\\xffmissing.png"):
        klab.read_image(os.fsencode(tmp_path) + b"/\xffmissing.png")
    with pytest.raises(FileNotFoundError, match="directory '.*no-such-dir' does not exist"):
        klab.write_image(tmp_path / "no-such-dir" / "a.png", image())
    with pytest.raises(IsADirectoryError, match="it is an existing directory"):
        klab.write_image(tmp_path, image())
    # Not an image: the file was read, its contents are wrong.
    (tmp_path / "text.png").write_text("not an image")
    with pytest.raises(ValueError, match="unknown image format"):
        klab.read_image(tmp_path / "text.png")


CASES = [
    ("gaussian:5", "mirror", 3),
    ("box:3", "constant:9", 1),
    ("sharpen", "wrap", 4),
    ("unsharp:5:1.5:0.7", "reflect", 3),
    ("emboss", "replicate", 0),
    ("sobel", "mirror", 3),
    ("sobel", "replicate", 4),
]


@pytest.mark.parametrize("spec,border,channels", CASES)
def test_cpu_path_equals_klab_apply_byte_for_byte(klab_cli, tmp_path, spec, border, channels):
    a = image(channels=channels, seed=len(spec))
    klab.write_image(tmp_path / "in.png", a)
    subprocess.run([klab_cli, "apply", "--backend", "cpu", "--filter", spec, "--border", border,
                    str(tmp_path / "in.png"), str(tmp_path / "out.png")], check=True, capture_output=True)
    expected = klab.read_image(tmp_path / "out.png")
    result = klab.filter(a, spec, border=border)
    assert result.dtype == np.uint8
    assert result.shape == (a.shape[:2] + (1,) if spec == "sobel" and a.ndim == 3 else a.shape)
    assert np.array_equal(result.reshape(expected.shape), expected)  # a gray file reads back as (H, W)


def test_layouts_and_row_strides_give_the_same_pixels(klab_cli, tmp_path):
    a = image(channels=3)
    klab.write_image(tmp_path / "in.png", a)
    subprocess.run([klab_cli, "apply", "--backend", "cpu", "--layout", "soa", "--filter", "gaussian:7", "--border", "mirror",
                    str(tmp_path / "in.png"), str(tmp_path / "out.png")], check=True, capture_output=True)
    expected = klab.read_image(tmp_path / "out.png")
    planar = np.ascontiguousarray(a.transpose(2, 0, 1))
    assert np.array_equal(klab.filter(planar, "gaussian:7", border="mirror", layout="chw").transpose(1, 2, 0), expected)
    # A window of a larger image: rows farther apart than their pixels.
    big = np.zeros((50, 80, 3), dtype=np.uint8)
    big[5:42, 11:64] = a
    window = big[5:42, 11:64]
    assert not window.flags.c_contiguous
    assert np.array_equal(klab.filter(window, "gaussian:7", border="mirror"), expected)


def test_out_is_filled_and_returned_and_may_be_the_input():
    a = image()
    expected = klab.filter(a, "box:5")
    out = np.empty_like(a)
    assert klab.filter(a, "box:5", out=out) is out
    assert np.array_equal(out, expected)
    klab.filter(a, "box:5", out=a)  # host arrays are read before the result is written
    assert np.array_equal(a, expected)


def test_threads_take_any_integer():
    a = image()
    expected = klab.filter(a, "box:5")
    for threads in (1, 3, np.int64(2), np.uint8(4)):
        assert np.array_equal(klab.filter(a, "box:5", threads=threads), expected)


def test_integral_sums_in_their_element_type():
    a = image(channels=4)
    sums = klab.integral(a)
    assert sums.dtype == np.uint32 and sums.shape == a.shape
    assert np.array_equal(sums, a.astype(np.uint64).cumsum(0).cumsum(1))
    # 255*W*H >= 2^32 needs 64-bit sums (the numeric contract's switch: 4105x4104).
    assert klab.integral(np.zeros((4104, 4104), np.uint8)).dtype == np.uint32
    assert klab.integral(np.zeros((4104, 4105), np.uint8)).dtype == np.uint64


def test_torch_cpu_tensors_give_tensors_back():
    torch = pytest.importorskip("torch")
    a = image()
    result = klab.filter(torch.from_numpy(a), "box:3")
    assert isinstance(result, torch.Tensor) and result.device.type == "cpu"
    assert np.array_equal(result.numpy(), klab.filter(a, "box:3"))


def raises(kind, fragment, *args, **kwargs):
    with pytest.raises(kind) as caught:
        klab.filter(*args, **kwargs)
    assert fragment in str(caught.value), str(caught.value)
    return str(caught.value)


def test_bad_input_raises_with_what_is_allowed():
    a = image()
    raises(TypeError, "allowed: uint8", a.astype(np.float32), "box:3")
    raises(ValueError, "2 channels", image(channels=2), "box:3")
    raises(ValueError, "5 channels", image(channels=5), "box:3")
    raises(ValueError, "allowed: (H, W) gray", a[None], "box:3")
    raises(ValueError, "allowed: (H, W) gray", a[0, 0], "box:3")
    raises(ValueError, "pixels are 6 bytes apart", a[:, ::2], "box:3")
    raises(ValueError, "rows are -", a[::-1], "box:3")
    raises(ValueError, "channels are -1 bytes apart", a[:, :, ::-1], "box:3")  # a BGR <-> RGB view
    raises(ValueError, "allowed: 'hwc' (H, W, C) or 'chw'", a, "box:3", layout="nchw")
    raises(ValueError, "planes are", np.ascontiguousarray(a.transpose(2, 0, 1))[:, 1:], "box:3", layout="chw")
    raises(ValueError, "empty", np.zeros((0, 5, 3), np.uint8), "box:3")
    raises(TypeError, "NumPy array", [[1, 2], [3, 4]], "box:3")
    raises(TypeError, "spec", a, 5)
    raises(ValueError, "gaussian size 4", a, "gaussian:4")
    raises(ValueError, "unknown filter", a, "blur:3")
    raises(ValueError, "mirror", a, "box:3", border="mirrored")
    raises(ValueError, "out has shape", a, "box:3", out=np.empty((37, 53, 4), np.uint8))
    raises(TypeError, "out holds uint16", a, "box:3", out=np.empty(a.shape, np.uint16))
    read_only = np.empty_like(a)
    read_only.flags.writeable = False
    raises(ValueError, "read-only", a, "box:3", out=read_only)
    raises(ValueError, "stream= with a host array", a, "box:3", stream=0)
    raises(ValueError, "CPU backend is the reference", a, "box:3", variant="conv.global")
    raises(ValueError, "CPU backend is the reference", a, "box:3", verify=True)
    raises(ValueError, "backend=", a, "box:3", backend="tpu")
    raises(ValueError, "threads=", a, "box:3", threads=-1)
    raises(TypeError, "threads is a str", a, "box:3", threads="2")
    raises(TypeError, "threads is a float", a, "box:3", threads=2.0)
    raises(TypeError, "threads is a bool", a, "box:3", threads=True)
    raises(ValueError, "allowed: (37, 53, 1)", a, "sobel", out=np.empty(a.shape, np.uint8))


def test_the_gpu_without_a_device_says_so():
    if klab.devices():
        pytest.skip("a CUDA device is present (test_gpu.py covers the GPU path)")
    raises(RuntimeError, "needs a CUDA device", image(), "box:3", backend="gpu")


def test_peers_writes_json_and_markdown(tmp_path):
    from klab import peers

    assert peers.main(["--sizes", "40x30", "--filters", "box:3", "--with-reference", "--warmup", "0", "--min-samples", "1",
                       "--samples", "2", "--out", str(tmp_path)]) == 0
    import json

    document = json.loads((tmp_path / "peers.json").read_text())
    reference = [row for row in document["rows"] if row["peer"] == "klab" and row["memory"] == "host"]
    assert reference and reference[0]["median_ms"] > 0
    assert "peer" in (tmp_path / "peers.md").read_text()
    if not klab.devices():
        assert any("no CUDA device" in note for note in document["notes"])
