"""klab against the libraries people filter images with today, on the same images:

    python -m klab.peers [--sizes HD,4K,8K] [--filters gaussian:5,box:9,sharpen] [--border mirror] [--out DIR]

Each filter's mask is klab's own (klab.filter's spec), given to every peer, so that all compute the
same correlation of an RGB uint8 image (H, W, 3):

  klab            klab.filter on a PyTorch tensor / CuPy array on the GPU (variant auto), and on a
                  NumPy array through the GPU (backend="gpu": upload, filter, download)
  CuPy            cupyx.scipy.ndimage.correlate (and uniform_filter for box:K)
  PyTorch         F.pad + F.conv2d (groups=3) on float32 NCHW, from and back to uint8 HWC (the
                  pipeline a user writes), and conv2d alone on the prepared float input
  OpenCV (CPU)    cv2.filter2D (and cv2.GaussianBlur / cv2.blur for gaussian:K / box:K)

A package that is not installed is skipped with a note, and so is the GPU without a CUDA device.
Times are host wall times of one call, synchronised before and after (what a caller waits for),
the median of at least --min-samples after --warmup calls, within about --budget-s per row. The
column max|diff| is the largest difference from klab's result (0 or 1 where a peer rounds the
same way; conv2d's TF32 default or another rounding shows there). Writes DIR/peers.json and
DIR/peers.md (default DIR: results/<gpu-slug>/).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import klab
from klab import _klab

SIZES = {"480p": (640, 480), "720p": (1280, 720), "HD": (1920, 1080), "4K": (3840, 2160), "8K": (7680, 4320)}
# klab's borders in each peer's words; None: the peer has no such border.
SCIPY_MODES = {"mirror": "mirror", "reflect": "reflect", "replicate": "nearest", "wrap": "wrap", "constant": "constant"}
TORCH_MODES = {"mirror": "reflect", "reflect": None, "replicate": "replicate", "wrap": "circular", "constant": "constant"}


def _import(name: str, notes: list):
    try:
        return __import__(name, fromlist=["_"])
    except Exception as error:  # ImportError, or a package that fails while loading (no driver, ...)
        notes.append(f"{name} is not usable here ({type(error).__name__}: {error}): its rows are skipped")
        return None


def parse_size(text: str) -> tuple:
    if text in SIZES:
        return text, SIZES[text]
    match = re.fullmatch(r"(\d+)x(\d+)", text)
    if not match:
        raise SystemExit(f"peers: size {text!r}; allowed: {', '.join(SIZES)} or WxH")
    return text, (int(match.group(1)), int(match.group(2)))


def test_image(width: int, height: int) -> np.ndarray:
    """RGB: smooth ramps plus noise (the timings do not depend on the content; the differences do)."""
    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:height, 0:width]
    ramps = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) * 255 // max(width + height - 2, 1)], -1)
    return np.clip(ramps + rng.integers(-40, 41, (height, width, 3)), 0, 255).astype(np.uint8)


class Timer:
    def __init__(self, warmup: int, min_samples: int, max_samples: int, budget_s: float):
        self.warmup, self.min_samples, self.max_samples, self.budget_s = warmup, min_samples, max_samples, budget_s

    def __call__(self, run, sync) -> dict:
        for _ in range(self.warmup):
            run()
            sync()
        samples = []
        started = time.perf_counter()
        while len(samples) < self.max_samples and (len(samples) < self.min_samples or time.perf_counter() - started < self.budget_s):
            sync()
            begin = time.perf_counter()
            run()
            sync()
            samples.append((time.perf_counter() - begin) * 1e3)
        return {"median_ms": statistics.median(samples), "min_ms": min(samples), "samples": len(samples)}


def max_diff(result, expected) -> int | None:
    if expected is None or result is None:
        return None
    return int(np.abs(np.asarray(result).astype(np.int16) - expected.astype(np.int16)).max())


def gpu_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m klab.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="HD,4K,8K", help="named sizes (480p 720p HD 4K 8K) or WxH, comma-separated")
    parser.add_argument("--filters", default="gaussian:5,box:9,sharpen", help="convolution specs, comma-separated")
    parser.add_argument("--border", default="mirror", help="constant, replicate, mirror, reflect or wrap")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before a row's samples")
    parser.add_argument("--min-samples", type=int, default=5, help="the fewest samples per row")
    parser.add_argument("--samples", type=int, default=30, help="the most samples per row")
    parser.add_argument("--budget-s", type=float, default=2.0, help="seconds per row, about")
    parser.add_argument("--with-reference", action="store_true", help="also time klab's CPU reference (slow by design; always timed without a CUDA device)")
    parser.add_argument("--out", help="folder for peers.json and peers.md (default: results/<gpu-slug>/)")
    args = parser.parse_args(argv)
    if args.border not in SCIPY_MODES:
        raise SystemExit(f"peers: --border {args.border}; allowed: {', '.join(SCIPY_MODES)}")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    filters = [f for f in args.filters.split(",") if f]
    for spec in filters:
        if _klab.filter_op(spec) != "convolve":
            raise SystemExit(f"peers: --filters {spec}; allowed: convolutions (box:K, gaussian:K, sharpen, ...)")
    timer = Timer(args.warmup, args.min_samples, max(args.samples, args.min_samples), args.budget_s)

    notes = []
    devices = klab.devices()
    if not devices:
        notes.append("no CUDA device: klab's GPU rows, CuPy and PyTorch are skipped")
    torch = _import("torch", notes) if devices else None
    cupy = _import("cupy", notes) if devices else None
    cupy_ndimage = _import("cupyx.scipy.ndimage", notes) if cupy is not None else None
    cv2 = _import("cv2", notes)
    if torch is not None and not torch.cuda.is_available():
        notes.append("torch sees no CUDA device: its rows are skipped")
        torch = None
    if torch is not None:
        notes.append(f"PyTorch with its defaults: cudnn.benchmark={torch.backends.cudnn.benchmark}, "
                     f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}")
    if cv2 is not None:
        notes.append(f"OpenCV on {cv2.getNumThreads()} threads of {os.cpu_count()} CPUs")
    if args.border == "constant":
        notes.append("border constant is 0 for every peer")

    rows = []
    for size_name, (width, height) in sizes:
        host = test_image(width, height)
        torch_image = torch.from_numpy(host).cuda() if torch is not None else None
        cupy_image = cupy.asarray(host) if cupy is not None else None
        for spec in filters:
            rows.extend(peer_rows(spec, args.border, size_name, host, torch_image, cupy_image, torch, cupy, cupy_ndimage, cv2,
                                  devices, args.with_reference, timer))
            print(f"peers: {size_name} {spec} done", file=sys.stderr)

    out = Path(args.out) if args.out else Path("results") / (gpu_slug(devices[0]["name"]) if devices else "no-gpu")
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "tool": "python -m klab.peers",
        "klab_version": klab.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": devices[0] if devices else None,
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "packages": {name: (module.__version__ if module is not None else None)
                     for name, module in (("numpy", np), ("torch", torch), ("cupy", cupy), ("opencv", cv2))},
        "method": "host wall time of one call, synchronised before and after; median of the samples after warm-up",
        "border": args.border,
        "notes": notes,
        "rows": rows,
    }
    (out / "peers.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "peers.md").write_text(markdown(document))
    print((out / "peers.md").read_text())
    print(f"peers: wrote {out / 'peers.json'} and {out / 'peers.md'}", file=sys.stderr)
    return 0


def peer_rows(spec, border, size_name, host, torch_image, cupy_image, torch, cupy, cupy_ndimage, cv2, devices, with_reference, timer):
    height, width = host.shape[:2]
    mask_height, mask_width, coefficients = _klab.mask(spec)
    mask = np.asarray(coefficients, dtype=np.float32).reshape(mask_height, mask_width)
    rows = []
    expected = None  # klab's result: the GPU's, else the reference's

    def add(peer, what, memory, run, sync, result=None):
        timing = timer(run, sync)
        rows.append({"size": size_name, "width": width, "height": height, "channels": 3, "filter": spec, "border": border,
                     "peer": peer, "what": what, "memory": memory, **timing, "max_abs_diff_vs_klab": max_diff(result, expected)})

    def skip(peer, why):
        rows.append({"size": size_name, "width": width, "height": height, "filter": spec, "border": border, "peer": peer,
                     "what": f"skipped: {why}"})

    def nothing():
        return None

    if devices:
        device_image = torch_image if torch_image is not None else cupy_image
        if device_image is not None:
            choice = klab.choose(device_image, spec, border)
            chosen = f"variant auto: {choice['variant']} {choice['shape']}"
            for library, image, sync in (("torch", torch_image, lambda: torch.cuda.synchronize()),
                                         ("cupy", cupy_image, lambda: cupy.cuda.Device().synchronize())):
                if image is None:
                    continue
                result = klab.filter(image, spec, border, verify=True)  # verified once, then timed
                if expected is None:
                    expected = result.cpu().numpy() if library == "torch" else cupy.asnumpy(result)
                add("klab", f"klab.filter on a {library} CUDA array ({chosen})", "device",
                    lambda image=image: klab.filter(image, spec, border), sync, result.cpu().numpy() if library == "torch" else cupy.asnumpy(result))
        host_result = klab.filter(host, spec, border, backend="gpu")
        if expected is None:
            expected = host_result
        add("klab", "klab.filter on a NumPy array, backend='gpu' (upload, filter, download)", "host",
            lambda: klab.filter(host, spec, border, backend="gpu"), nothing, host_result)
    if with_reference or not devices:
        reference = klab.filter(host, spec, border)
        if expected is None:
            expected = reference
        add("klab", "klab.filter on a NumPy array: the CPU reference (double accumulation)", "host",
            lambda: klab.filter(host, spec, border), nothing, reference)

    if cupy_image is not None and cupy_ndimage is not None:
        sync = lambda: cupy.cuda.Device().synchronize()  # noqa: E731
        weights = cupy.asarray(mask[:, :, None])
        mode = SCIPY_MODES[border]
        result = cupy_ndimage.correlate(cupy_image, weights, mode=mode)
        add("CuPy", "cupyx.scipy.ndimage.correlate, the same mask", "device",
            lambda: cupy_ndimage.correlate(cupy_image, weights, mode=mode), sync, cupy.asnumpy(result))
        if spec.startswith("box:"):
            k = mask_width
            result = cupy_ndimage.uniform_filter(cupy_image, size=(k, k, 1), mode=mode)
            add("CuPy", "cupyx.scipy.ndimage.uniform_filter", "device",
                lambda: cupy_ndimage.uniform_filter(cupy_image, size=(k, k, 1), mode=mode), sync, cupy.asnumpy(result))

    if torch_image is not None:
        torch_rows(torch, torch_image, mask, border, add, skip)

    if cv2 is not None:
        cv_border = {"mirror": cv2.BORDER_REFLECT_101, "reflect": cv2.BORDER_REFLECT, "replicate": cv2.BORDER_REPLICATE,
                     "constant": cv2.BORDER_CONSTANT}.get(border)
        if cv_border is None:
            skip("OpenCV", f"cv2.filter2D has no {border} border")
        else:
            add("OpenCV", "cv2.filter2D, the same mask (CPU)", "host",
                lambda: cv2.filter2D(host, -1, mask, borderType=cv_border), nothing, cv2.filter2D(host, -1, mask, borderType=cv_border))
            k = mask_width
            if spec.startswith("gaussian:") and spec.count(":") == 1:
                add("OpenCV", "cv2.GaussianBlur (CPU)", "host", lambda: cv2.GaussianBlur(host, (k, k), 0, borderType=cv_border), nothing,
                    cv2.GaussianBlur(host, (k, k), 0, borderType=cv_border))
            if spec.startswith("box:"):
                add("OpenCV", "cv2.blur (CPU)", "host", lambda: cv2.blur(host, (k, k), borderType=cv_border), nothing,
                    cv2.blur(host, (k, k), borderType=cv_border))
    return rows


def torch_rows(torch, image, mask, border, add, skip):
    import torch.nn.functional as functional

    mode = TORCH_MODES[border]
    if mode is None:
        skip("PyTorch", f"F.pad has no {border} border (PyTorch's 'reflect' is klab's mirror)")
        return
    ry, rx = mask.shape[0] // 2, mask.shape[1] // 2
    weight = torch.from_numpy(mask).cuda().expand(3, 1, *mask.shape).contiguous()

    def prepared():
        planar = image.permute(2, 0, 1).unsqueeze(0).float()
        return functional.pad(planar, (rx, rx, ry, ry), mode=mode)

    def pipeline():
        filtered = functional.conv2d(prepared(), weight, groups=3)
        return filtered.round().clamp(0, 255).to(torch.uint8)[0].permute(1, 2, 0).contiguous()

    sync = torch.cuda.synchronize
    add("PyTorch", "F.pad + F.conv2d (groups=3) on float32 NCHW, from and back to uint8 HWC", "device", pipeline, sync,
        pipeline().cpu().numpy())
    padded = prepared()
    add("PyTorch", "F.conv2d alone (float32 NCHW, padded input ready)", "device",
        lambda: functional.conv2d(padded, weight, groups=3), sync)


def markdown(document: dict) -> str:
    device = document["device"]
    lines = ["# klab and its peers (`python -m klab.peers`)", ""]
    lines.append(f"- device: {device['name'] if device else 'none (CPU only)'}"
                 + (f", driver {device['driver']}, runtime {device['runtime']}" if device else ""))
    lines.append(f"- host: {document['host']['cpus']} CPUs, Python {document['host']['python']}; packages: "
                 + ", ".join(f"{k} {v}" for k, v in document["packages"].items() if v is not None))
    lines.append(f"- klab {document['klab_version']}, {document['date']}; border {document['border']}; RGB uint8 images (H, W, 3)")
    lines.append(f"- method: {document['method']}")
    lines.extend(f"- note: {note}" for note in document["notes"])
    lines.append("")
    lines.append("`time / klab` divides a row's median by klab's in the same memory (device arrays, or host arrays "
                 "through the GPU); `max|diff|` is the largest difference from klab's verified result.")
    sizes = list(dict.fromkeys(row["size"] for row in document["rows"]))
    for size in sizes:
        rows = [row for row in document["rows"] if row["size"] == size]
        first = next((row for row in rows if "width" in row), None)
        lines += ["", f"## {size}" + (f" ({first['width']}x{first['height']})" if first and size != f"{first['width']}x{first['height']}" else ""), "",
                  "| filter | peer | what | median ms | min ms | time / klab | max\\|diff\\| |", "|---|---|---|---:|---:|---:|---:|"]
        for row in rows:
            if "median_ms" not in row:
                lines.append(f"| {row['filter']} | {row['peer']} | {row['what']} | | | | |")
                continue
            base = next((r for r in rows if r["peer"] == "klab" and r["filter"] == row["filter"] and r.get("memory") == row["memory"]
                         and "median_ms" in r), None)
            ratio = f"{row['median_ms'] / base['median_ms']:.3g}" if base else ""
            diff = row["max_abs_diff_vs_klab"]
            lines.append(f"| {row['filter']} | {row['peer']} | {row['what']} | {row['median_ms']:.3f} | {row['min_ms']:.3f} | "
                         f"{ratio} | {'' if diff is None else diff} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
