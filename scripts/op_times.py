#!/usr/bin/env python3
"""One CSV row per kernel launch of an Nsight Compute metrics run: its time, DRAM bytes, warp
instructions, issue activity, registers and achieved occupancy (scripts/op-times.sh).

Input: what `ncu --csv --print-units base --metrics METRIC,...` printed with the metrics of METRICS
below; the profiled program's own output may come first. Bytes and times are read in whatever unit
ncu gives them (shape_sweep.value_of), the counts and percentages as printed, and all are written
in the units of the columns. A launch that lacks one of the metrics is an error, not a
zero: a figure quoted in a kernel's notes must have been measured.

Usage: python3 scripts/op_times.py NCU_LOG OUT_CSV   (prints the rows too)
"""
import argparse
import csv
import io
import sys

import shape_sweep

# (column, metric, factor from the metric's base unit, format)
COLUMNS = [
    ("time_us", shape_sweep.TIME, 1e6, "{:.1f}"),
    ("dram_read_MB", shape_sweep.READ, 1e-6, "{:.1f}"),
    ("dram_write_MB", shape_sweep.WRITE, 1e-6, "{:.1f}"),
    ("warp_instructions_M", "sm__inst_executed.sum", 1e-6, "{:.2f}"),
    ("issue_active_pct", "sm__inst_issued.avg.pct_of_peak_sustained_active", 1, "{:.0f}"),
    ("registers", "launch__registers_per_thread", 1, "{:.0f}"),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", 1, "{:.0f}"),
]
METRICS = [metric for _, metric, _, _ in COLUMNS]


def rows(found):
    """[header, one row per launch in launch order] from shape_sweep.launches(text, METRICS)."""
    table = [["id", "kernel", "grid", "block"] + [column for column, _, _, _ in COLUMNS]]
    for launch in sorted(found, key=int):
        kernel, block, grid, metrics = found[launch]
        missing = [metric for metric in METRICS if metric not in metrics]
        if missing:
            raise ValueError(f"launch {launch} ({kernel}) has no {', '.join(missing)}: was ncu run with --metrics {','.join(METRICS)}?")
        table.append([launch, kernel, grid, block] + [form.format(metrics[metric] * factor) for _, metric, factor, form in COLUMNS])
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", help="what `ncu --csv --metrics ...` printed")
    parser.add_argument("out", help="the CSV to write")
    args = parser.parse_args()
    try:
        with open(args.log, encoding="utf-8") as handle:
            table = rows(shape_sweep.launches(handle.read(), METRICS))
    except (OSError, ValueError) as error:
        sys.exit(f"op_times.py: {args.log}: {error}")
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(table)
    try:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text.getvalue())
    except OSError as error:
        sys.exit(f"op_times.py: {args.out}: {error}")
    print(text.getvalue(), end="")


if __name__ == "__main__":
    main()
