#!/usr/bin/env python3
"""DRAM bytes, time and L2 hit rate of each launch shape in an Nsight Compute metrics run.

Input: what `ncu --csv --metrics METRIC,...` prints, one row per launch and metric; the profiled
program's own output may come first (everything before the header line "ID",... is skipped).
Launches are grouped by kernel, block and grid. Under `klab tune`, every shape of a variant's
tuning space is launched many times, and its block and grid (the grid follows the tuning
parameters, e.g. a strip height) tell it apart: one row per shape, the medians over its launches.
Shapes that differ only in a parameter that leaves the block and the grid alike (an unroll factor,
a prefetch depth) fall into one row: this table cannot tell them apart.
Read metrics: dram__bytes_read.sum, dram__bytes_write.sum, gpu__time_duration.sum and
lts__t_sector_hit_rate.pct, those of them the run has (at least one). --input-mb adds each row's
DRAM read as a multiple of the filter's input.

scripts/gpu-sweep.sh runs `klab tune` so and prints this table. Usage:
python3 scripts/shape_sweep.py CSV [--input-mb MB]
"""
import argparse
import collections
import csv
import io
import math
import statistics
import sys

import ncu_summary

BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
SECONDS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1, "second": 1}
READ, WRITE, TIME, HIT = "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "lts__t_sector_hit_rate.pct"
HEADER = '"ID",'


def value_of(row):
    """A metric's value in base units (bytes, seconds, percent)."""
    unit, text = row["Metric Unit"], row["Metric Value"]
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        raise ValueError(f"launch {row['ID']}, {row['Metric Name']}: '{text}' is not a number") from None
    if row["Metric Name"] in (READ, WRITE):
        if unit not in BYTES:
            raise ValueError(f"{row['Metric Name']}: unit '{unit}' is not one of {', '.join(BYTES)}")
        return number * BYTES[unit]
    if row["Metric Name"] == TIME:
        if unit not in SECONDS:
            raise ValueError(f"{TIME}: unit '{unit}' is not one of {', '.join(SECONDS)}")
        return number * SECONDS[unit]
    return number


def launches(text, wanted=(READ, WRITE, TIME, HIT)):
    """{launch id: (kernel, block, grid, {metric: value})} from ncu's CSV output, the metrics named
    in `wanted` only (values in base units: value_of)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADER)), None)
    if start is None:
        raise ValueError('no Nsight Compute CSV in it (no header line starting with "ID",): was ncu run with --csv --metrics?')
    found = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") not in wanted:
            continue
        _, _, _, metrics = found.setdefault(row["ID"], (row["Kernel Name"], row["Block Size"], row["Grid Size"], {}))
        metrics[row["Metric Name"]] = value_of(row)
    if not found:
        raise ValueError(f"none of the metrics {', '.join(wanted)} was profiled")
    return found


def threads(size):
    """Threads in a "(x, y, z)" block or grid size."""
    parts = size.strip().removeprefix("(").removesuffix(")").split(",")
    try:
        x, y, z = (int(part) for part in parts)
    except ValueError:
        raise ValueError(f"block or grid size '{size}' is not of the form (x, y, z)") from None
    return x * y * z


def kernel_name(kernel):
    """The kernel's short name (Nsight's metrics page writes an anonymous namespace as its details page does)."""
    return ncu_summary.short_name(kernel, details_page=True)


def table(found, input_mb=None):
    """One line per (kernel, block, grid): the medians over its launches, the most warps first."""
    groups = collections.defaultdict(list)
    for kernel, block, grid, metrics in found.values():
        groups[(kernel, block, grid)].append(metrics)
    present = [m for m in (READ, WRITE, TIME, HIT) if any(m in metrics for _, _, _, metrics in found.values())]
    heads = {READ: "read MB", WRITE: "written MB", TIME: "time us", HIT: "L2 hit %"}
    header = ["kernel", "block", "grid", "warps", "launches"] + [heads[m] for m in present]
    if READ in present and input_mb:
        header.insert(header.index("read MB") + 1, "x input")
    lines = [header]
    order = sorted(groups, key=lambda key: (kernel_name(key[0]), -threads(key[1]) * threads(key[2])))
    for kernel, block, grid in order:
        runs = groups[(kernel, block, grid)]
        line = [kernel_name(kernel), block, grid, str(threads(block) * threads(grid) // 32), str(len(runs))]
        for metric in present:
            values = [metrics[metric] for metrics in runs if metric in metrics]
            median = statistics.median(values) if values else None
            if median is None:
                line += ["-", "-"] if metric == READ and input_mb else ["-"]
            elif metric in (READ, WRITE):
                line.append(f"{median / 1e6:.1f}")
                if metric == READ and input_mb:
                    line.append(f"{median / 1e6 / input_mb:.2f}")
            elif metric == TIME:
                line.append(f"{median * 1e6:.1f}")
            else:
                line.append(f"{median:.1f}")
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) if i < 3 else cell.rjust(width) for i, (cell, width) in enumerate(zip(line, widths))).rstrip()
                     for line in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="what `ncu --csv --metrics ...` printed (any output before the CSV's header is skipped)")
    parser.add_argument("--input-mb", type=float, help="the filter's input in MB (10^6 bytes): adds DRAM read as a multiple of it")
    args = parser.parse_args()
    if args.input_mb is not None and not (math.isfinite(args.input_mb) and args.input_mb > 0):
        parser.error(f"--input-mb {args.input_mb}: give the input's size in MB, a finite number > 0")
    try:
        with open(args.csv, encoding="utf-8") as handle:
            text = table(launches(handle.read()), args.input_mb)
    except (OSError, ValueError) as error:  # ValueError: the run's CSV, a value or a size it cannot read
        sys.exit(f"shape_sweep.py: {args.csv}: {error}")
    print(text)


if __name__ == "__main__":
    main()
