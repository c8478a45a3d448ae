#!/usr/bin/env python3
"""Summarise the per-block timestamps that probes/block_timeline.hpp prints.

Each line "TL <tag> <block> <SM> <n> <mark 0> ... <mark 7>" (nanoseconds, %globaltimer; marks from
n on are 0) gives when one block of a launch reached each of its n marks. For each tag this prints,
in microseconds from the launch's earliest mark 0:
  - each mark's spread over the blocks (min, 10th percentile, median, 90th percentile, max);
  - each phase's duration (mark k-1 to mark k) over the blocks;
  - with --active A B: how many blocks lie between mark A and mark B at moments across the launch
    (e.g. how many tiles are writing);
  - with --group N: each phase's median duration per group of N consecutive blocks (e.g. per row of
    tiles, N = tiles per row);
  - with --per-sm M: the SMs grouped by how many blocks they ran, and when each group's SMs saw
    their last block reach mark M (an uneven share of blocks shows as a later end). A line's SM is
    where its block made its last mark: for a mark of an earlier kernel, the grouping is the last
    kernel's;
  - with --by-arrival M: mark M's median over the blocks ranked by their arrival on their SM (rank 0:
    the first of an SM's blocks to make mark 0), to show whether an SM's blocks end in the order
    they reached it. %globaltimer moves in steps of tens of ns, so blocks of one wave that start
    together mostly tie on mark 0; ties go by block number, the order in which blocks are handed out.
Lines that do not start with "TL " are skipped, so a whole log can be given.

Usage: python3 scripts/timeline.py LOG [--names start,waited,...] [--active A B] [--steps 20]
       [--group N] [--per-sm M] [--by-arrival M]
"""
import argparse
import statistics
import sys
from collections import defaultdict


class Block:
    def __init__(self, index, sm, marks):
        self.index = index
        self.sm = sm
        self.marks = marks  # nanoseconds, one per mark


def parse(lines):
    """{tag: [[Block] per launch]} from the TL lines as block_timeline.hpp prints them: a launch's
    lines one after another, block 0 first (a line of block 0 starts the tag's next launch). Raises
    ValueError naming a line that is malformed or a block given twice in one launch."""
    launches = defaultdict(list)
    seen = {}  # tag -> the block numbers of its current launch
    for number, line in enumerate(lines, 1):
        if not line.startswith("TL "):
            continue
        fields = line.split()
        try:
            tag, index, sm, count = fields[1], int(fields[2]), int(fields[3]), int(fields[4])
            values = [int(v) for v in fields[5:]]
        except (IndexError, ValueError):
            raise ValueError(f"line {number}: expected 'TL <tag> <block> <SM> <n> <marks...>', got {line.strip()!r}")
        if not 1 <= count <= len(values):
            raise ValueError(f"line {number}: {count} marks announced, {len(values)} given")
        if 0 in values[:count]:
            raise ValueError(f"line {number}: block {index} never reached mark {values.index(0)} (every block must make every mark)")
        runs = launches[tag]
        if not runs or index == 0:
            runs.append([])
            seen[tag] = set()
        if index in seen[tag]:
            raise ValueError(f"line {number}: block {index} of tag {tag} twice in one launch (each launch starts with block 0)")
        if runs[-1] and count != len(runs[-1][0].marks):
            raise ValueError(f"line {number}: blocks of one launch of tag {tag} with different numbers of marks "
                             f"({len(runs[-1][0].marks)} and {count})")
        seen[tag].add(index)
        runs[-1].append(Block(index, sm, values[:count]))
    return launches


def spread(values):
    """(min, p10, median, p90, max) of a list of numbers."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return (ordered[0],) * 5
    deciles = statistics.quantiles(ordered, n=10, method="inclusive")
    return ordered[0], deciles[0], statistics.median(ordered), deciles[-1], ordered[-1]


def mark_index(name, names):
    """A mark given by its name or its number."""
    if name in names:
        return names.index(name)
    if name.isdigit() and int(name) < len(names):
        return int(name)
    raise ValueError(f"mark {name!r}: give one of {', '.join(names)} or its number (0 to {len(names) - 1})")


def relative_us(blocks):
    """The blocks with their marks in us after the earliest mark 0."""
    origin = min(b.marks[0] for b in blocks)
    return [Block(b.index, b.sm, [(m - origin) / 1000.0 for m in b.marks]) for b in blocks]


def active_counts(blocks, first, last, moments):
    """For each moment (us), the blocks that have reached mark `first` and not yet mark `last`."""
    return [sum(1 for b in blocks if b.marks[first] <= t < b.marks[last]) for t in moments]


def sm_blocks(blocks):
    """{SM: [its blocks, in the given order]}."""
    grouped = defaultdict(list)
    for b in blocks:
        grouped[b.sm].append(b)
    return grouped


def per_sm(blocks, mark):
    """{blocks per SM: [the SM's latest `mark`, one per SM]}."""
    grouped = defaultdict(list)
    for members in sm_blocks(blocks).values():
        grouped[len(members)].append(max(b.marks[mark] for b in members))
    return dict(grouped)


def by_arrival(blocks, mark):
    """{rank: [mark `mark` of each block that was the rank-th (from 0) of its SM's blocks to make
    mark 0, ties by block number]}."""
    ranked = defaultdict(list)
    for members in sm_blocks(blocks).values():
        for rank, b in enumerate(sorted(members, key=lambda b: (b.marks[0], b.index))):
            ranked[rank].append(b.marks[mark])
    return dict(ranked)


def summary(tag, blocks, names, active=None, steps=20, group=None, sm_mark=None, arrival_mark=None):
    """The report of one tag, as a list of lines. Times in us from the earliest mark 0."""
    marks = len(blocks[0].marks)
    names = names[:marks] + [f"mark{k}" for k in range(len(names), marks)]
    us = relative_us(blocks)
    width = max(len(n) for n in names) * 2 + 4
    lines = [f"{tag}: {len(us)} blocks on {len({b.sm for b in us})} SMs; us from the earliest {names[0]}",
             f"  {'mark':{width}s} {'min':>8s} {'p10':>8s} {'median':>8s} {'p90':>8s} {'max':>8s}"]
    for k in range(marks):
        lines.append(f"  {names[k]:{width}s}" + "".join(f" {v:8.2f}" for v in spread([b.marks[k] for b in us])))
    for k in range(1, marks):
        phase = f"{names[k - 1]} -> {names[k]}"
        lines.append(f"  {phase:{width}s}" + "".join(f" {v:8.2f}" for v in spread([b.marks[k] - b.marks[k - 1] for b in us])))
    if active:
        first, last = (mark_index(a, names) for a in active)
        if first >= last:
            raise ValueError(f"--active {active[0]} {active[1]}: the first mark must come before the second")
        end = max(b.marks[last] for b in us)
        moments = [end * (i + 1) / steps for i in range(steps)]
        counts = active_counts(us, first, last, moments)
        lines.append(f"  blocks between {names[first]} and {names[last]}: "
                     + ", ".join(f"{c} at {t:.1f}" for t, c in zip(moments, counts)))
    if group:
        groups = defaultdict(list)
        for b in us:
            groups[b.index // group].append(b)
        lines.append(f"  median phase per group of {group} blocks: group, " + ", ".join(
            f"{names[k - 1]} -> {names[k]}" for k in range(1, marks)))
        for g in sorted(groups):
            members = groups[g]
            lines.append(f"  {g:5d}" + "".join(
                f" {statistics.median(b.marks[k] - b.marks[k - 1] for b in members):8.2f}" for k in range(1, marks)))
    if sm_mark is not None:
        k = mark_index(sm_mark, names)
        for count, ends in sorted(per_sm(us, k).items()):
            lines.append(f"  SMs that ran {count} blocks: {len(ends)}, their last {names[k]} at median {statistics.median(ends):.2f},"
                         f" max {max(ends):.2f}")
    if arrival_mark is not None:
        k = mark_index(arrival_mark, names)
        lines.append(f"  median {names[k]} by arrival on the SM (rank: median, blocks): " + ", ".join(
            f"{rank}: {statistics.median(ends):.2f} ({len(ends)})" for rank, ends in sorted(by_arrival(us, k).items())))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="a file holding TL lines (a whole log will do)")
    parser.add_argument("--names", default="", help="the marks' names, comma-separated, in order")
    parser.add_argument("--active", nargs=2, metavar=("A", "B"), help="count the blocks between marks A and B")
    parser.add_argument("--steps", type=int, default=20, help="moments for --active (default 20)")
    parser.add_argument("--group", type=int, help="per-group medians, N consecutive blocks a group")
    parser.add_argument("--per-sm", metavar="M", help="when the SMs, grouped by their count of blocks, saw their last mark M")
    parser.add_argument("--by-arrival", metavar="M", help="mark M's median over the blocks ranked by their arrival on their SM")
    args = parser.parse_args(argv)
    if args.steps < 1 or (args.group is not None and args.group < 1):
        parser.error("--steps and --group take a count of 1 or more")
    try:
        with open(args.log, encoding="utf-8", errors="replace") as f:
            launches = parse(f)
        if not launches:
            sys.exit(f"timeline: no 'TL ' line in {args.log} (did the marked launch run? see probes/block_timeline.hpp)")
        names = [n for n in args.names.split(",") if n]
        for tag, runs in sorted(launches.items()):
            for number, blocks in enumerate(runs, 1):
                title = tag if len(runs) == 1 else f"{tag} (launch {number} of {len(runs)})"
                print("\n".join(summary(title, blocks, names, args.active, args.steps, args.group, args.per_sm, args.by_arrival)))
    except (OSError, ValueError) as error:
        sys.exit(f"timeline: {error}")


if __name__ == "__main__":
    main()
