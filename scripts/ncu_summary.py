#!/usr/bin/env python3
"""A kernel's key Nsight Compute figures, and where its instructions go.

--details: the CSV of `ncu -i REPORT --page details --csv`. Per profiled launch: time, cycles,
  instructions, issue slots, registers, occupancy, DRAM throughput, the SM clock and the busiest
  pipe.
--report: an Nsight Compute report (.ncu-rep): both pages are written beside it as CSV (REPORT's
  name with .details.csv and .sass.csv for .ncu-rep, by `ncu -i`), then read as below.
--sass: the CSV of `ncu -i REPORT --page source --csv --print-source sass` (a "Kernel Name" line,
  a header and one row per SASS instruction with its execution count, per kernel). Per kernel: the
  warp instructions executed, the code's hottest parts (instructions that ran the same number of
  times: a loop body, or the path through it that most passes take) and the opcode mix of the
  hottest one, each opcode with its share of the kernel's warp-stall samples: the "instructions per
  row" reading that kernel preambles and notes quote; then the kernel's stall samples by reason
  (wait, long_sb, not_selected, ...: what its warps waited for; the six most frequent).

scripts/gpu-experiment.sh and scripts/gpu-probe.sh print it after each profile (PROFILE=...).
Usage: python3 scripts/ncu_summary.py (--report REPORT.ncu-rep | [--details DETAILS.csv] [--sass SASS.csv]) [--parts N]
"""
import argparse
import collections
import csv
import re
import subprocess
import sys

# The SM clock last: Nsight Compute locks it at its base unless told not to (--clock-control none),
# and a kernel's bound can differ between that clock and the one a benchmark runs at.
FIGURES = ["Duration", "Elapsed Cycles", "SM Active Cycles", "Executed Instructions", "Issue Slots Busy", "Registers Per Thread",
           "Theoretical Occupancy", "Achieved Occupancy", "DRAM Throughput", "SM Frequency"]
# The pipe's name may carry its kind: "ALU", "FMA", "Tensor (INT)", "FMA (FP16)".
BUSIEST_PIPE = re.compile(r"\w+(?: \(\w+\))? is the highest-utilized pipeline \([0-9.]+%\)")
COUNT = "Instructions Executed"
STALLS = "Warp Stall Sampling (All Samples)"
REASON = re.compile(r"stall_(\w+)")  # a stall reason's column of all samples ("stall_wait"; not "stall_wait (Not Issued)")
REASONS_LISTED = 6  # the most frequent reasons listed
SOURCE = "Source"


def short_name(kernel, details_page=False):
    """'void klab::<unnamed>::k<(int)3, (int)4>(args)' -> 'k<(int)3, (int)4>': no return type,
    namespaces or parameters. The details page writes an anonymous namespace inside another as
    'unnamed>' (its '>' closes nothing; 'k<unnamed>::T' is a template argument in one), one at
    global scope as '<unnamed>': details_page=True reads it so."""
    kernel = kernel.removeprefix("void ")
    if details_page:
        kernel = re.sub(r"(?:(?<=\w<)|(?<!<))unnamed>", "<unnamed>", kernel)
    depth, start = 0, 0
    for i, c in enumerate(kernel):
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(depth - 1, 0)
        elif depth == 0 and c == ":" and kernel[i + 1:i + 2] == ":":
            start = i + 2
        elif depth == 0 and c == "(":
            return kernel[start:i]
    return kernel[start:]


PAGES = {"details": ["--page", "details", "--csv"], "sass": ["--page", "source", "--csv", "--print-source", "sass"]}
DETAILS_COMMAND = "ncu -i REPORT " + " ".join(PAGES["details"])
SASS_COMMAND = "ncu -i REPORT " + " ".join(PAGES["sass"])


def export_pages(report):
    """Writes the report's details and SASS pages beside it as CSV (by `ncu -i`); their paths."""
    stem = report.removesuffix(".ncu-rep")
    paths = {page: f"{stem}.{page}.csv" for page in PAGES}
    for page, options in PAGES.items():
        try:
            with open(paths[page], "w", encoding="utf-8") as out:
                done = subprocess.run(["ncu", "-i", report, *options], stdout=out, stderr=subprocess.PIPE, text=True, check=False)
        except OSError as e:  # no ncu on PATH, or the CSV cannot be written
            raise ValueError(f"{report}: its {page} page cannot be exported ({e}); Nsight Compute's ncu must be on PATH") from e
        if done.returncode != 0:
            raise ValueError(f"{report}: `ncu -i {report} {' '.join(options)}` failed (exit {done.returncode}): "
                             f"{' '.join(done.stderr.split())[:300]}")
    return paths["details"], paths["sass"]


def csv_rows(path, command):
    """The rows of a CSV text file; a clear error for an empty file or one that is no CSV text."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [row for row in csv.reader(f) if row]
    except (csv.Error, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a CSV text file ({e}); write it with: {command}") from e
    if not rows:
        raise ValueError(f"{path}: empty (did `{command}` fail?)")
    return rows


def details_lines(path):
    """The key figures of each launch in the details page, in the report's order."""
    header, *rows = csv_rows(path, DETAILS_COMMAND)
    if not {"ID", "Kernel Name", "Metric Name", "Metric Value"} <= set(header):
        raise ValueError(f"{path}: not Nsight Compute's details page (no ID, Kernel Name, Metric Name and Metric Value "
                         f"columns); write it with: {DETAILS_COMMAND}")
    launches = {}  # launch ID -> (kernel, {figure: value}, [busiest pipe])
    for values in rows:
        row = dict(zip(header, values))
        _, figures, pipe = launches.setdefault(row["ID"], (short_name(row.get("Kernel Name") or "", details_page=True), {}, []))
        name = row.get("Metric Name") or ""
        if name in FIGURES and name not in figures:
            figures[name] = f"{row.get('Metric Value') or ''} {row.get('Metric Unit') or ''}".strip()
        found = BUSIEST_PIPE.search(row.get("Rule Description") or "")
        if found and not pipe:
            pipe.append(found.group(0))
    if not launches:
        raise ValueError(f"{path}: no launch in it, only the header")
    lines = []
    for kernel, figures, pipe in launches.values():
        lines.append(f"{kernel}:")
        lines += [f"  {name}: {figures[name]}" for name in FIGURES if name in figures] + [f"  {p}" for p in pipe]
    return lines


# Qualifiers kept in an opcode's name because they change what it costs: IMAD's forms (a move or a
# 64-bit add is no multiply), a 64-bit add's high half, the width of a memory access.
IMAD_FORMS = {"MOV", "WIDE", "HI", "SHL", "IADD", "X"}
KEPT = {"IMAD": IMAD_FORMS, "UIMAD": IMAD_FORMS, "IADD3": {"X"}, "UIADD3": {"X"}, "LEA": {"HI", "X"}, "ULEA": {"HI", "X"}}
MEMORY = ("LD", "ST", "ATOM", "RED")
WIDTHS = {"128", "64", "U8", "S8", "U16", "S16"}


def opcode(source):
    """'@!P0 IMAD.MOV.U32 R1, RZ, RZ, R2' -> 'IMAD.MOV'; 'LDS.128 R4, [R2]' -> 'LDS.128'; 'SHF.R.U32.HI' -> 'SHF'."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    if not words:
        return "?"
    base, *qualifiers = words[0].split(".")
    kept = WIDTHS if base.startswith(MEMORY) else KEPT.get(base, set())
    return ".".join([base] + [q for q in qualifiers if q in kept])


def samples(cell):
    """A count of stall samples as the SASS page writes it ("1,234"; empty for none)."""
    return int(cell.replace(",", "") or 0)


def sass_sections(path):
    """(kernel, [(opcode, executions, stall samples, ((reason, samples), ...))]) per section of the
    SASS page; a section that repeats an earlier one exactly (the page can list a kernel twice) is
    dropped."""
    found, seen = [], set()
    kernel, header, rows = None, None, []

    def close():
        if kernel is not None and rows and (kernel, tuple(rows)) not in seen:
            seen.add((kernel, tuple(rows)))
            found.append((kernel, rows))

    for line in csv_rows(path, SASS_COMMAND):
        if line[0] == "Kernel Name":
            close()
            kernel, header, rows = (line[1] if len(line) > 1 else "?"), None, []
        elif header is None:
            if kernel is None or SOURCE not in line:
                raise ValueError(f"{path}: not Nsight Compute's SASS page (no 'Kernel Name' line followed by a header with "
                                 f"'{SOURCE}'); write it with: {SASS_COMMAND}")
            if COUNT not in line:
                raise ValueError(f"{path}: the SASS page of {short_name(kernel)} has no '{COUNT}' column: profile with "
                                 "--set full, or at least --section SourceCounters")
            header = {name: i for i, name in enumerate(line)}
            width = len(line)
            reasons = [(match.group(1), i) for i, name in enumerate(line) if (match := REASON.fullmatch(name))]
        else:
            if len(line) < width:
                raise ValueError(f"{path}: a row of {short_name(kernel)} with {len(line)} of the header's {width} columns: {line[:3]}")
            try:
                count = int(line[header[COUNT]].replace(",", ""))
                source = line[header[SOURCE]]
            except ValueError:
                count = -1
            if count < 0:
                raise ValueError(f"{path}: a row of {short_name(kernel)} without a whole number of executions: {line[:3]}")
            try:
                stalls = samples(line[header[STALLS]]) if STALLS in header else 0
                by_reason = tuple((reason, samples(line[i])) for reason, i in reasons)
            except ValueError:
                raise ValueError(f"{path}: a row of {short_name(kernel)} whose stall samples are not whole numbers: {line[:3]}") from None
            rows.append((opcode(source), count, stalls, by_reason))
    close()
    if not found:
        raise ValueError(f"{path}: no kernel with SASS rows (profile with --set full, or at least --section SourceCounters)")
    return found


def sass_lines(kernel, rows, parts):
    total = sum(count for _, count, _, _ in rows)
    all_stalls = sum(s for _, _, s, _ in rows)
    lines = [f"{short_name(kernel)}: {total:,} warp instructions"]
    groups = collections.defaultdict(list)  # executions -> the instructions that ran that often
    for row in rows:
        if row[1] > 0:
            groups[row[1]].append(row)
    hottest = sorted(groups.items(), key=lambda item: -item[0] * len(item[1]))[:parts]
    for executions, members in hottest:
        lines.append(f"  {len(members)} instructions run {executions:,} times each: {executions * len(members) / total:.1%} of them")
    if hottest:
        members = hottest[0][1]
        mix = collections.Counter(op for op, _, _, _ in members)
        stalls = collections.Counter()
        for op, _, s, _ in members:
            stalls[op] += s
        share = (lambda op: f" ({stalls[op] / all_stalls:.0%})") if all_stalls else (lambda op: "")
        lines.append(f"  the hottest {len(members)}, by opcode" + (" (share of the kernel's stall samples)" if all_stalls else "") + ":")
        lines.append("    " + ", ".join(f"{op} {n}{share(op)}" for op, n in mix.most_common()))
    by_reason = collections.Counter()
    for *_, reasons in rows:
        for reason, count in reasons:
            by_reason[reason] += count
    sampled = sum(by_reason.values())
    if sampled:
        lines.append("  stall samples by reason: " +
                     ", ".join(f"{reason} {count / sampled:.0%}" for reason, count in by_reason.most_common(REASONS_LISTED) if count))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", help="an Nsight Compute report (.ncu-rep): its pages exported beside it, then read")
    parser.add_argument("--details", help="the details page as CSV (ncu -i REPORT --page details --csv)")
    parser.add_argument("--sass", help="the SASS page as CSV (ncu -i REPORT --page source --csv --print-source sass)")
    parser.add_argument("--parts", type=int, default=3, help="how many of the hottest parts of the SASS to list (default 3)")
    args = parser.parse_args()
    if bool(args.report) == bool(args.details or args.sass):
        parser.error("give --report, or --details, --sass or both")
    if args.parts < 1:
        parser.error(f"--parts {args.parts}: give 1 or more")
    if args.report:
        try:
            args.details, args.sass = export_pages(args.report)
        except ValueError as e:
            print(f"ncu_summary: {e}", file=sys.stderr)
            return 2

    def sass_summary(path):
        return [line for kernel, rows in sass_sections(path) for line in sass_lines(kernel, rows, args.parts)]

    status = 0
    for path, summarize in ((args.details, details_lines), (args.sass, sass_summary)):
        if not path:
            continue
        try:
            print("\n".join(summarize(path)), flush=True)
        except (OSError, ValueError) as e:  # the other page's figures are still worth printing
            print(f"ncu_summary: {e}", file=sys.stderr, flush=True)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
