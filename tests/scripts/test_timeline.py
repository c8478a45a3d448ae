"""scripts/timeline.py on TL lines written for the test in probes/block_timeline.hpp's format: two
launches of four blocks whose marks are set so that every figure the report prints is known."""
import pathlib
import subprocess
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "timeline.py"
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(SCRIPT.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # log_file, however the test is started
from log_file import write_log  # noqa: E402
import timeline  # noqa: E402

T0 = 1_000_000_000  # an arbitrary %globaltimer origin, in ns


def line(block, sm, *marks_us, tag="demo"):
    """A TL line of `block` with its marks given in us after T0, padded to eight marks with zeros."""
    marks = [T0 + int(m * 1000) for m in marks_us] + [0] * (8 - len(marks_us))
    return f"TL {tag} {block} {sm} {len(marks_us)} " + " ".join(map(str, marks))


# Launch 1: blocks start at 0, 1, 2, 3 us, wait 1 us each, then write for 10, 20, 30, 40 us.
LAUNCH_1 = [line(b, b % 2, b, b + 1, b + 1 + 10 * (b + 1)) for b in range(4)]
# Launch 2: the same blocks 5 us later.
LAUNCH_2 = [line(b, b % 2, 5 + b, 6 + b, 6 + b + 10 * (b + 1)) for b in range(4)]


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False)


class ParseTest(unittest.TestCase):
    def test_launches_split_at_block_zero_and_other_lines_skipped(self):
        launches = timeline.parse(["a log line", *LAUNCH_1, "TLX not ours", *LAUNCH_2])
        self.assertEqual(list(launches), ["demo"])
        runs = launches["demo"]
        self.assertEqual([len(r) for r in runs], [4, 4])
        self.assertEqual(runs[1][3].marks, [T0 + 8000, T0 + 9000, T0 + 49000])
        self.assertEqual(runs[0][1].sm, 1)

    def test_tags_are_kept_apart(self):
        launches = timeline.parse([line(0, 0, 0, 1, tag="a"), line(0, 0, 0, 2, tag="b"), line(1, 0, 1, 3, tag="a")])
        self.assertEqual(sorted(launches), ["a", "b"])
        self.assertEqual([len(r) for r in launches["a"]], [2])

    def test_malformed_lines_are_named(self):
        for bad, message in [("TL demo 0 0 3 5 6", "3 marks announced, 2 given"), ("TL demo zero 0 1 5", "expected"),
                             ("TL demo 0 0 0", "0 marks announced")]:
            with self.assertRaisesRegex(ValueError, "line 1: .*" + message):
                timeline.parse([bad])

    def test_a_mark_never_made_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "line 2: block 1 never reached mark 1"):
            timeline.parse([line(0, 0, 0, 1), f"TL demo 1 0 2 {T0} 0 0 0 0 0 0 0"])

    def test_a_block_twice_in_a_launch_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "line 3: block 1 of tag demo twice"):
            timeline.parse([line(0, 0, 0, 1), line(1, 0, 0, 1), line(1, 0, 0, 1)])

    def test_different_mark_counts_in_a_launch_are_an_error(self):
        with self.assertRaisesRegex(ValueError, "different numbers of marks"):
            timeline.parse([line(0, 0, 0, 1), line(1, 0, 0, 1, 2)])


class SummaryTest(unittest.TestCase):
    def setUp(self):
        self.blocks = timeline.parse(LAUNCH_1)["demo"][0]

    def test_spread(self):
        self.assertEqual(timeline.spread([7.0]), (7.0,) * 5)
        low, p10, median, p90, high = timeline.spread([float(v) for v in range(11)])
        self.assertEqual((low, p10, median, p90, high), (0.0, 1.0, 5.0, 9.0, 10.0))

    def test_marks_and_phases_from_the_earliest_first_mark(self):
        report = timeline.summary("demo", self.blocks, ["start", "waited", "written"])
        self.assertEqual(report[0], "demo: 4 blocks on 2 SMs; us from the earliest start")
        rows = {r.split()[0] if "->" not in r else " ".join(r.split()[:3]): [float(v) for v in r.split()[-5:]] for r in report[2:]}
        self.assertEqual(rows["start"][0], 0.0)
        self.assertEqual(rows["start"][4], 3.0)
        self.assertEqual(rows["written"][4], 3 + 1 + 40)
        self.assertEqual(rows["start -> waited"], [1.0] * 5)
        self.assertEqual(rows["waited -> written"][0], 10.0)
        self.assertEqual(rows["waited -> written"][2], 25.0)
        self.assertEqual(rows["waited -> written"][4], 40.0)

    def test_unnamed_marks_get_numbers(self):
        report = timeline.summary("demo", self.blocks, ["start"])
        self.assertIn("mark1 -> mark2", "\n".join(report))

    def test_active_blocks(self):
        # Writing (waited -> written): block b from b + 1 to b + 1 + 10 (b + 1) us, the end excluded.
        us = timeline.relative_us(self.blocks)
        self.assertEqual(us[3].marks, [3.0, 4.0, 44.0])
        self.assertEqual(timeline.active_counts(us, 1, 2, [0.5, 1.0, 4.5, 12.0, 30.0, 44.0]), [0, 1, 4, 3, 2, 0])
        report = timeline.summary("demo", self.blocks, ["start", "waited", "written"], active=("waited", "2"), steps=4)
        self.assertEqual(report[-1], "  blocks between waited and written: 3 at 11.0, 2 at 22.0, 1 at 33.0, 0 at 44.0")

    def test_groups(self):
        report = timeline.summary("demo", self.blocks, ["start", "waited", "written"], group=2)
        self.assertEqual([r.split() for r in report[-2:]], [["0", "1.00", "15.00"], ["1", "1.00", "35.00"]])

    def test_per_sm(self):
        # SM 0 ran blocks 0 and 2 (written at 11 and 33 us), SM 1 blocks 1 and 3 (22 and 44); a third
        # SM with one block is added.
        blocks = self.blocks + timeline.parse([line(9, 7, 0, 1, 5)])["demo"][0]
        us = timeline.relative_us(blocks)
        self.assertEqual(timeline.per_sm(us, 2), {2: [33.0, 44.0], 1: [5.0]})
        report = timeline.summary("demo", blocks, ["start", "waited", "written"], sm_mark="written")
        self.assertEqual(report[-2:], ["  SMs that ran 1 blocks: 1, their last written at median 5.00, max 5.00",
                                       "  SMs that ran 2 blocks: 2, their last written at median 38.50, max 44.00"])

    def test_by_arrival(self):
        # SM 0 ran blocks 0 and 2 (started at 0 and 2 us, written at 11 and 33), SM 1 blocks 1 and 3
        # (1 and 3; 22 and 44): rank 0 is blocks 0 and 1, rank 1 blocks 2 and 3.
        us = timeline.relative_us(self.blocks)
        self.assertEqual(timeline.by_arrival(us, 2), {0: [11.0, 22.0], 1: [33.0, 44.0]})
        report = timeline.summary("demo", self.blocks, ["start", "waited", "written"], arrival_mark="written")
        self.assertEqual(report[-1], "  median written by arrival on the SM (rank: median, blocks): 0: 16.50 (2), 1: 38.50 (2)")

    def test_by_arrival_ranks_by_start_then_block_number(self):
        # On SM 5: block 7 starts first; blocks 4 and 6 start together, so 4 ranks before 6 although
        # its line comes after 6's (a sort on the start alone would keep the lines' order).
        blocks = timeline.parse([line(0, 1, 0, 9), line(6, 5, 2, 10), line(4, 5, 2, 30), line(7, 5, 1, 20)])["demo"][0]
        us = timeline.relative_us(blocks)
        self.assertEqual(timeline.by_arrival(us, 1), {0: [9.0, 20.0], 1: [30.0], 2: [10.0]})
        self.assertEqual(timeline.by_arrival(us, 0), {0: [0.0, 1.0], 1: [2.0], 2: [2.0]})

    def test_active_marks_out_of_order_are_an_error(self):
        for active in [("written", "waited"), ("waited", "waited")]:
            with self.assertRaisesRegex(ValueError, "the first mark must come before the second"):
                timeline.summary("demo", self.blocks, ["start", "waited", "written"], active=active)

    def test_unknown_mark_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "mark 'sent': give one of start, waited, written or its number"):
            timeline.summary("demo", self.blocks, ["start", "waited", "written"], active=("waited", "sent"))


class CommandLineTest(unittest.TestCase):
    def write(self, lines):
        return write_log(self, lines)

    def test_two_launches_reported(self):
        result = run(self.write(["klab-bench: starting", *LAUNCH_1, *LAUNCH_2]), "--names", "start,waited,written")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("demo (launch 1 of 2): 4 blocks on 2 SMs", result.stdout)
        self.assertIn("demo (launch 2 of 2): 4 blocks on 2 SMs", result.stdout)

    def test_every_report_from_the_command_line(self):
        result = run(self.write(LAUNCH_1), "--names", "start,waited,written", "--active", "waited", "written", "--steps", "4",
                     "--group", "2", "--per-sm", "written", "--by-arrival", "2")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout.splitlines()
        self.assertIn("  blocks between waited and written: 3 at 11.0, 2 at 22.0, 1 at 33.0, 0 at 44.0", out)
        self.assertIn("  SMs that ran 2 blocks: 2, their last written at median 38.50, max 44.00", out)
        self.assertEqual(out[-4].split(), ["0", "1.00", "15.00"])
        self.assertEqual(out[-1], "  median written by arrival on the SM (rank: median, blocks): 0: 16.50 (2), 1: 38.50 (2)")
        result = run(self.write(LAUNCH_1), "--active", "2", "1")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(), "timeline: --active 2 1: the first mark must come before the second")
        result = run(self.write(LAUNCH_1), "--by-arrival", "ended")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(), "timeline: mark 'ended': give one of mark0, mark1, mark2 or its number (0 to 2)")

    def test_no_lines_says_why(self):
        result = run(self.write(["nothing here"]))
        self.assertEqual(result.returncode, 1)
        self.assertIn("no 'TL ' line in", result.stderr)

    def test_missing_file_and_bad_counts(self):
        missing = run("/nonexistent/timeline.log")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("No such file", missing.stderr)
        result = run(self.write(LAUNCH_1), "--steps", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--steps and --group take a count of 1 or more", result.stderr)

    def test_malformed_line_reported_with_its_number(self):
        result = run(self.write(["TL demo 0 0 2 5"]))
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(), "timeline: line 1: 2 marks announced, 1 given")


if __name__ == "__main__":
    unittest.main()
