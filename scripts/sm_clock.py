#!/usr/bin/env python3
"""The SM clock that a kernel's blocks ran at, from the totals probes/sm_clock.hpp prints.

Each line "CLK <tag> <launches> <cycles> <nanoseconds> <blocks>" holds a process's running totals
for the copy that prints that tag: the counted launches before the printing one, and their
blocks' cycles (clock64) and nanoseconds (%globaltimer) summed. Between two lines of a tag, the
cycles gained over the nanoseconds gained is the rate the blocks of those launches kept, in GHz.
For each tag this prints the rate from its first line to its last, and the lowest and highest rate
between neighbouring lines. The totals restart with each process, so a line whose launches are no
more than the line before it starts a new run (e.g. klab tune's log, then klab-bench's, given as
one file). A tuner's log mixes every shape it measured: its rate is theirs together.
Lines that do not start with "CLK " are skipped, so a whole log can be given; a log without one is
reported and the others are still read (exit status 1).

Usage: python3 scripts/sm_clock.py LOG [LOG...]
"""
import argparse
import sys
from collections import defaultdict


def parse(lines):
    """{tag: [[(launches, cycles, ns, blocks)] per run]} from the CLK lines, in their order. Raises
    ValueError naming a malformed line or totals that fall while the launches grow."""
    runs = defaultdict(list)
    for number, line in enumerate(lines, 1):
        if not line.startswith("CLK "):
            continue
        fields = line.split()
        try:
            if len(fields) != 6:
                raise ValueError
            tag = fields[1]
            launches, cycles, ns, blocks = (int(v) for v in fields[2:])
        except ValueError:
            raise ValueError(f"line {number}: expected 'CLK <tag> <launches> <cycles> <nanoseconds> <blocks>', got {line.strip()!r}")
        tag_runs = runs[tag]
        if not tag_runs or launches <= tag_runs[-1][-1][0]:
            tag_runs.append([])
        elif cycles < tag_runs[-1][-1][1] or ns < tag_runs[-1][-1][2] or blocks < tag_runs[-1][-1][3]:
            raise ValueError(f"line {number}: tag {tag}'s totals fall while its launches grow: {line.strip()!r}")
        tag_runs[-1].append((launches, cycles, ns, blocks))
    return runs


def rate(earlier, later):
    """GHz between two totals: the cycles gained over the nanoseconds gained (None if no time passed)."""
    ns = later[2] - earlier[2]
    return (later[1] - earlier[1]) / ns if ns > 0 else None


def summary(title, points):
    """Lines for one run of a tag: the rate from its first line to its last, and the spread between
    neighbouring lines."""
    if len(points) < 2:
        return [f"{title}: one CLK line (launches {points[0][0]}): two are needed for a rate"]
    first, last = points[0], points[-1]
    blocks = last[3] - first[3]
    overall = rate(first, last)
    if overall is None or blocks == 0:
        return [f"{title}: launches {first[0]} to {last[0]}: no block counted between them"]
    steps = [r for r in (rate(a, b) for a, b in zip(points, points[1:])) if r is not None]
    mean_us = (last[2] - first[2]) / blocks / 1e3
    return [f"{title}: launches {first[0]} to {last[0]}, {blocks} blocks (mean {mean_us:.2f} us): SM clock {overall:.4f} GHz"
            f" (between neighbouring lines {min(steps):.4f} to {max(steps):.4f})"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", metavar="LOG", help="a file holding CLK lines (a whole log will do)")
    args = parser.parse_args(argv)
    failed = False
    for log in args.logs:
        try:
            with open(log, encoding="utf-8", errors="replace") as f:
                runs = parse(f)
        except (OSError, ValueError) as error:
            print(f"sm_clock: {log}: {error}", file=sys.stderr)
            failed = True
            continue
        if not runs:
            print(f"sm_clock: no 'CLK ' line in {log} (fewer than sm_clock::kPrintEvery, 100, counted launches in a process?"
                  " see probes/sm_clock.hpp)", file=sys.stderr)
            failed = True
            continue
        for tag, tag_runs in sorted(runs.items()):
            for number, points in enumerate(tag_runs, 1):
                title = f"{log}: {tag}" if len(tag_runs) == 1 else f"{log}: {tag} (run {number} of {len(tag_runs)})"
                print("\n".join(summary(title, points)))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
