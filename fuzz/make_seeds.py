#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, data/fuzz/<target>/ (fuzz/README.md): small valid inputs
of every kind each parser reads, and the malformed ones we know of. Run from the repository root:

    python3 fuzz/make_seeds.py

It rewrites the seeds only (never regressions/, which hold what the fuzzer found). PNG and PNM
files are built byte by byte here; JPEG files need cjpeg (Debian: libjpeg-turbo-progs).
The tuning-cache and benchmark seeds are cut from results/nvidia-h200/, the committed H200 run.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "fuzz")
FIXTURES = os.path.join(ROOT, "data", "fixtures")


def write(target, name, content):
    folder = os.path.join(DATA, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(content)


def clear_seeds(target):
    """Removes the old seeds of `target`, keeping regressions/."""
    folder = os.path.join(DATA, target)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            os.remove(path)


# --- PNG ------------------------------------------------------------------------------------

def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(width, height, bit_depth, colour_type, rows, extra_before_idat=b"", interlace=0, idat_parts=1):
    """`rows`: the filtered scanlines (each starting with its filter byte), already laid out."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, interlace)
    data = zlib.compress(b"".join(rows), 9)
    step = max(1, -(-len(data) // idat_parts))
    idats = b"".join(chunk(b"IDAT", data[i:i + step]) for i in range(0, len(data), step))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra_before_idat + idats + chunk(b"IEND", b"")


def rows_of(width, height, samples_per_pixel, value):
    return [b"\x00" + bytes(value(x, y, c) & 0xFF for x in range(width) for c in range(samples_per_pixel))
            for y in range(height)]


def adam7_rows(width, height, value):
    """Adam7 passes of an 8-bit RGB image, filter 0."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = []
    for x0, y0, dx, dy in passes:
        xs = range(x0, width, dx)
        for y in range(y0, height, dy):
            if len(xs):
                rows.append(b"\x00" + bytes(value(x, y, c) & 0xFF for x in xs for c in range(3)))
    return rows


def png_seeds():
    clear_seeds("png")
    for name in ["rgb_4x2.png", "rgba_2x2.png", "gray_alpha_2x1.png", "palette_3x1.png", "gray16_2x2.png"]:
        shutil.copy(os.path.join(FIXTURES, name), os.path.join(DATA, "png", name))
    rgb = lambda x, y, c: 40 * x + 20 * y + 70 * c
    write("png", "rgb_5x5_adam7.png", png(5, 5, 8, 2, adam7_rows(5, 5, rgb), interlace=1))
    # 1-bit gray, 9 pixels wide: two bytes per row, the last one partly padding.
    write("png", "gray_1bit_9x3.png", png(9, 3, 1, 0, [b"\x00\xAA\x80", b"\x00\x55\x00", b"\x00\xFF\x80"]))
    write("png", "palette_trns_2x2.png",
          png(2, 2, 8, 3, [b"\x00\x00\x01", b"\x00\x01\x00"],
              chunk(b"PLTE", bytes([255, 0, 0, 0, 0, 255])) + chunk(b"tRNS", bytes([128]))))
    write("png", "rgb_trns_2x1.png", png(2, 1, 8, 2, [b"\x00\x01\x02\x03\x04\x05\x06"],
                                         chunk(b"tRNS", struct.pack(">HHH", 1, 2, 3))))
    # Colour-space chunks klab drops before decoding (it reads the stored values).
    colour_space = (chunk(b"gAMA", struct.pack(">I", 100000)) + chunk(b"sRGB", b"\x00") +
                    chunk(b"cHRM", bytes(32)) + chunk(b"iCCP", b"icc\x00\x00" + zlib.compress(b"profile")) +
                    chunk(b"cICP", bytes([1, 13, 0, 1])))
    write("png", "gray_colour_space_3x1.png", png(3, 1, 8, 0, [b"\x00\x40\x80\xC0"], colour_space))
    write("png", "rgba_4x4_two_idat.png", png(4, 4, 8, 6, rows_of(4, 4, 4, lambda x, y, c: x * y + c), idat_parts=2))
    whole = png(4, 2, 8, 2, rows_of(4, 2, 3, rgb))
    write("png", "truncated_in_idat.png", whole[:len(whole) - 20])
    bad_crc = bytearray(whole)
    bad_crc[29] ^= 0xFF  # inside IHDR's CRC
    write("png", "bad_crc.png", bytes(bad_crc))
    write("png", "over_size_limit.png", png(200000, 1, 8, 0, [b"\x00\x00"]))
    write("png", "zero_width.png", png(0, 1, 8, 0, [b"\x00"]))
    write("png", "signature_only.png", b"\x89PNG\r\n\x1a\n")
    # A header of 30000x30000 over one row of data: refused before 900 MB are allocated.
    write("png", "huge_header_tiny_data.png", png(30000, 30000, 8, 0, [b"\x00" + bytes(30000)]))


# --- JPEG -----------------------------------------------------------------------------------

def jpeg_pieces(data):
    """A JPEG's marker segments after SOI, each SOS with its entropy-coded data: (marker, bytes)."""
    pieces, at = [], 2
    while at < len(data):
        marker = data[at + 1]
        if marker == 0xD9:
            pieces.append((marker, data[at:at + 2]))
            break
        end = at + 2 + struct.unpack(">H", data[at + 2:at + 4])[0]
        if marker == 0xDA:  # the data runs to the next marker that is not a stuffed 0xFF or a restart
            while not (data[end] == 0xFF and data[end + 1] != 0 and not 0xD0 <= data[end + 1] <= 0xD7):
                end += 1
        pieces.append((marker, data[at:end]))
        at = end
    return pieces


def many_scans_jpeg(ppm):
    """A valid progressive JPEG of 1136 scans (every AC coefficient of every component in six
    successive-approximation passes), spliced from 12 cjpeg files, since cjpeg writes at most 100."""
    def script(component, coefficients):
        lines = ["0,1,2: 0 0 0 1;", "0,1,2: 0 0 1 0;"]  # the DC scans every file starts with
        for k in coefficients:
            lines.append(f"{component}: {k} {k} 0 5;")
            lines += [f"{component}: {k} {k} {al} {al - 1};" for al in range(5, 0, -1)]
        return "\n".join(lines) + "\n"

    spliced = b""
    for n, (component, first) in enumerate((c, k) for c in range(3) for k in range(1, 64, 16)):
        scans = os.path.join(os.path.dirname(ppm), "scans.txt")
        with open(scans, "w") as f:
            f.write(script(component, range(first, min(first + 16, 64))))
        data = subprocess.run(["cjpeg", "-quality", "90", "-sample", "1x1", "-scans", scans, ppm], check=True,
                              capture_output=True).stdout
        pieces = [p for p in jpeg_pieces(data) if p[0] != 0xD9]
        if n > 0:  # later files: only their AC scans (with their Huffman tables), after the two DC scans
            second_dc = [i for i, p in enumerate(pieces) if p[0] == 0xDA][1]
            pieces = pieces[second_dc + 1:]
        spliced += b"".join(p[1] for p in pieces)
    return b"\xFF\xD8" + spliced + b"\xFF\xD9"


def jpeg_seeds():
    clear_seeds("jpeg")
    for name in ["gray_8x8.jpg", "cmyk_8x8.jpg"]:
        shutil.copy(os.path.join(FIXTURES, name), os.path.join(DATA, "jpeg", name))
    with tempfile.TemporaryDirectory() as tmp:
        ppm = os.path.join(tmp, "in.ppm")
        width, height = 17, 9
        with open(ppm, "wb") as f:
            f.write(b"P6\n%d %d\n255\n" % (width, height))
            f.write(bytes((13 * x + 29 * y + 97 * c) & 0xFF for y in range(height) for x in range(width) for c in range(3)))

        def cjpeg(name, *options):
            out = subprocess.run(["cjpeg", "-quality", "90", *options, ppm], check=True, capture_output=True).stdout
            write("jpeg", name, out)
            return out

        cjpeg("rgb_17x9_420.jpg")
        cjpeg("rgb_17x9_444.jpg", "-sample", "1x1")
        cjpeg("gray_17x9.jpg", "-grayscale")
        progressive = cjpeg("rgb_17x9_progressive.jpg", "-progressive")
        cjpeg("rgb_17x9_arithmetic.jpg", "-arithmetic")
        cjpeg("rgb_17x9_restart.jpg", "-restart", "1B")
        cjpeg("rgb_17x9_optimized.jpg", "-optimize")
        cjpeg("rgb_17x9_rgb_colourspace.jpg", "-rgb")
        write("jpeg", "truncated_progressive.jpg", progressive[:len(progressive) // 2])
        write("jpeg", "soi_only.jpg", b"\xFF\xD8\xFF")
        # The 17x9 baseline file's header made to say 30000x30000: too short for it.
        baseline = bytearray(open(os.path.join(DATA, "jpeg", "rgb_17x9_420.jpg"), "rb").read())
        sof = baseline.index(b"\xFF\xC0")
        baseline[sof + 5:sof + 9] = struct.pack(">HH", 30000, 30000)
        write("jpeg", "huge_header_short_file.jpg", bytes(baseline))
        write("jpeg", "many_scans.jpg", many_scans_jpeg(ppm))


# --- PNM ------------------------------------------------------------------------------------

def pnm_seeds():
    clear_seeds("pnm")
    for name in ["seed000_3x3.pgm", "rgb_4x2.ppm"]:
        shutil.copy(os.path.join(FIXTURES, name), os.path.join(DATA, "pnm", name))
    write("pnm", "p5_2x2.pgm", b"P5\n2 2\n255\n\x00\x40\x80\xFF")
    write("pnm", "p6_2x1.ppm", b"P6 2 1 255\n\x01\x02\x03\x04\x05\x06")
    write("pnm", "p5_maxval15.pgm", b"P5\n3 1\n15\n\x00\x07\x0F")
    write("pnm", "p2_comments.pgm", b"P2#a\n# width\n2#b\n1 # height\n7\n0 # sample\n7\n")
    write("pnm", "p5_raster_like_comment.pgm", b"P5\n2 1\n255\n# ")
    write("pnm", "p3_crlf.ppm", b"P3\r\n1 1\r\n255\r\n1 2 3\r\n")
    write("pnm", "p5_16bit.pgm", b"P5\n1 1\n65535\n\x12\x34")
    write("pnm", "p6_truncated.ppm", b"P6\n4 4\n255\n\x00\x00\x00")
    write("pnm", "p2_above_maxval.pgm", b"P2\n2 1\n10\n5 11\n")
    write("pnm", "p2_maxval0.pgm", b"P2\n1 1\n0\n0\n")
    write("pnm", "p5_huge_claim.pgm", b"P5\n99999999999 99999999999\n255\n\x00")
    write("pnm", "p2_letter_sample.pgm", b"P2\n2 1\n255\n1 x\n")


# --- text parsers ---------------------------------------------------------------------------

def mask_seeds():
    clear_seeds("mask")
    write("mask", "sharpen.txt", "0 -1 0\n-1 5 -1\n0 -1 0\n")
    write("mask", "gauss_divisor.txt", "# 3x3 Gaussian\n1 2 1\n2 4 2\n1 2 1\ndivisor: 16\n")
    write("mask", "commas_crlf.txt", "1,2,1\r\n+2, 4 ,2\r\n1,\t2,1\r\n")
    write("mask", "row_1x5.txt", "1 1 1 1 1   # a row\n\ndivisor: 5")
    write("mask", "exponents.txt", "1e-3 -2.5E+1 .5\n")
    write("mask", "even.txt", "1 1\n1 1\n")
    write("mask", "ragged.txt", "1 2 1\n2 4\n1 2 1\n")
    write("mask", "two_divisors.txt", "1\ndivisor: 2\ndivisor: 3\n")
    write("mask", "not_a_number.txt", "1 2 x\n")
    write("mask", "too_large.txt", "3.5e38\n")
    write("mask", "divisor_overflows.txt", "1e30\ndivisor: 1e-30\n")
    write("mask", "divisor_zero.txt", "1\ndivisor: 0\n")
    write("mask", "empty.txt", "# nothing\n\n")
    write("mask", "wide_33.txt", " ".join(["1"] * 33) + "\n")


def spec_seeds():
    clear_seeds("spec")
    specs = {
        "box5": "box:5", "gaussian": "gaussian:9:2.5", "unsharp": "unsharp:5:1:1.5", "sharpen": "sharpen",
        "sobel": "sobel", "integral": "integral", "mask_file": "mask:absent.txt", "constant": "constant:7",
        "mirror": "mirror", "block": "32x8", "class": "HD/3x3/c3/aos", "class_rect": "8K/31x1/c4/soa",
        "box_even": "box:4", "sigma_tiny": "gaussian:5:0.0001", "amount_negative": "unsharp:3:1:-1",
        "constant_256": "constant:256", "block_1025": "1025x1", "class_bad": "HD/3x3/c2/aos",
        "class_sobel": "sobel/8K/c1/aos", "class_integral": "integral/8K/c3/soa/u64", "class_integral_hd_u64": "integral/HD/c1/aos/u64",
    }
    for name, text in specs.items():
        write("spec", name + ".txt", text)


def bench_json_seeds():
    clear_seeds("bench_json")
    with open(os.path.join(ROOT, "results", "nvidia-h200", "bench.json")) as f:
        run = json.load(f)
    names = ["baseline.copy/480p/rgb.aos/copy/none/manual_time"]
    kept = [b for b in run["benchmarks"] if b.get("run_name") in names][:3]
    aggregate = [b for b in run["benchmarks"] if b.get("run_type") == "aggregate"][:1]
    cpu = [b for b in run["benchmarks"] if b["name"].startswith("cpu.")][:1]
    context = {k: run["context"][k] for k in ["executable", "gpu_name", "klab_gpu_key", "klab_study", "git_commit"]}
    small = {"context": context, "benchmarks": kept + aggregate + cpu}
    write("bench_json", "small_run.json", json.dumps(small, indent=1))
    failed = {"context": {}, "benchmarks": [{"name": "conv.global/HD/rgb.aos/gauss9/replicate/block:32x8/manual_time",
                                             "run_type": "iteration", "error_occurred": True,
                                             "error_message": "verification failed"}]}
    write("bench_json", "failed_row.json", json.dumps(failed))
    write("bench_json", "units.json", json.dumps({"benchmarks": [
        {"name": "a/b/c/d/e", "real_time": 2, "time_unit": "ms", "bytes_per_second": 1e9},
        {"name": "a/b/c/d/e", "real_time": 3, "time_unit": "s"},
        {"name": "x/y/z/w/v/block:8x8/real_time", "real_time": 5}]}))
    write("bench_json", "no_benchmarks.json", '{"context": {}}')
    write("bench_json", "nameless_entry.json", '{"benchmarks": [{"real_time": 1}]}')
    write("bench_json", "string_time.json", '{"benchmarks": [{"name": "a", "real_time": "1"}]}')
    write("bench_json", "bare_nan.json", '{"benchmarks": [{"name": "a", "real_time": NaN}]}')
    write("bench_json", "unknown_unit.json", '{"benchmarks": [{"name": "a", "real_time": 1, "time_unit": "h"}]}')
    write("bench_json", "truncated.json", json.dumps(small)[:200])


def tuning_cache_seeds():
    clear_seeds("tuning_cache")
    with open(os.path.join(ROOT, "results", "nvidia-h200", "autotune.json")) as f:
        cache = json.load(f)
    records = cache["records"]
    compact = lambda doc: json.dumps(doc, separators=(",", ":"))
    one = {"format": cache["format"], "version": cache["version"], "records": records[:1]}
    write("tuning_cache", "one_record.json", compact(one))
    # Two records of one class: the second replaces the first.
    write("tuning_cache", "same_key_twice.json", compact(dict(one, records=[records[0], records[0]])))
    with_parameters = json.loads(compact(records[1]))
    with_parameters["top"][0]["shape"]["parameters"] = {"outputs_per_thread": 2}
    with_parameters["invalid"] = [{"shape": with_parameters["top"][0]["shape"], "reason": "differs from the CPU reference"}]
    write("tuning_cache", "parameters_invalid.json", compact(dict(one, records=[with_parameters])))
    write("tuning_cache", "empty.json", compact(dict(one, records=[])))
    write("tuning_cache", "version_2.json", compact(dict(one, version=2)))
    write("tuning_cache", "not_a_cache.json", compact({"format": "something-else", "records": []}))
    other_gpu = json.loads(compact(records[0]))
    other_gpu["gpu"]["name"] = "NVIDIA L4"
    write("tuning_cache", "other_gpu.json", compact(dict(one, records=[other_gpu])))
    big_block = json.loads(compact(records[0]))
    big_block["top"][0]["shape"]["block"] = [64, 64]
    write("tuning_cache", "block_64x64.json", compact(dict(one, records=[big_block])))
    negative = json.loads(compact(records[0]))
    negative["top"][0]["median_us"] = -1
    write("tuning_cache", "negative_time.json", compact(dict(one, records=[negative])))
    write("tuning_cache", "truncated.json", compact(one)[:1000])


def apply_list_seeds():
    clear_seeds("apply_list")
    write("apply_list", "list.txt", "a.png\n# a comment\n\n  b.jpg  \r\nphotos/\nname#with#hash.png\n\t# indented\nlast.pgm")
    write("apply_list", "comments_only.txt", "# one\n#two\n\n")
    write("apply_list", "empty.txt", "")
    write("apply_list", "nul_byte.txt", b"a.png\nb\x00.png\n")


def main():
    if not shutil.which("cjpeg"):
        sys.exit("make_seeds.py: cjpeg not found (Debian: apt-get install libjpeg-turbo-progs)")
    png_seeds()
    jpeg_seeds()
    pnm_seeds()
    mask_seeds()
    spec_seeds()
    bench_json_seeds()
    tuning_cache_seeds()
    apply_list_seeds()


if __name__ == "__main__":
    main()
