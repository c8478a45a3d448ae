"""scripts/sm_clock.py on CLK lines written for the test in probes/sm_clock.hpp's format, with totals
chosen so that every rate it prints is known."""
import pathlib
import subprocess
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sm_clock.py"
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(SCRIPT.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # log_file, however the test is started
from log_file import write_log  # noqa: E402
import sm_clock  # noqa: E402


def line(launches, cycles, ns, blocks, tag="demo"):
    return f"CLK {tag} {launches} {cycles} {ns} {blocks}"


# One process, 100 blocks of 10 us between neighbouring lines: 1.9 GHz, then 1.8, then 2.0 (the
# lowest rate neither the first nor the last, the highest not the last).
TUNE = [line(99, 0, 0, 0), line(199, 1_900_000, 1_000_000, 100), line(299, 3_700_000, 2_000_000, 200),
        line(399, 5_700_000, 3_000_000, 300)]
# A second process (its totals restart): 1.5 GHz throughout.
BENCH = [line(99, 150_000, 100_000, 10), line(199, 300_000, 200_000, 20)]


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False)


class ParseTest(unittest.TestCase):
    def test_runs_split_where_the_launches_restart_and_other_lines_skipped(self):
        runs = sm_clock.parse(["klab tune: starting", *TUNE, "CLKX not ours", *BENCH, line(99, 7, 7, 1, tag="other")])
        self.assertEqual(sorted(runs), ["demo", "other"])
        self.assertEqual([len(r) for r in runs["demo"]], [4, 2])
        self.assertEqual(runs["demo"][1][0], (99, 150_000, 100_000, 10))
        self.assertEqual(runs["other"], [[(99, 7, 7, 1)]])

    def test_processes_of_one_line_each_are_runs_of_their_own(self):
        runs = sm_clock.parse([line(99, 500, 300, 2), line(99, 400, 200, 1)])
        self.assertEqual(runs["demo"], [[(99, 500, 300, 2)], [(99, 400, 200, 1)]])

    def test_rates(self):
        runs = sm_clock.parse(TUNE)["demo"][0]
        self.assertAlmostEqual(sm_clock.rate(runs[0], runs[1]), 1.9)
        self.assertAlmostEqual(sm_clock.rate(runs[1], runs[2]), 1.8)
        self.assertAlmostEqual(sm_clock.rate(runs[2], runs[3]), 2.0)
        self.assertAlmostEqual(sm_clock.rate(runs[0], runs[3]), 1.9)
        self.assertIsNone(sm_clock.rate(runs[0], runs[0]))

    def test_malformed_and_falling_totals_named_by_line(self):
        with self.assertRaisesRegex(ValueError, r"^line 2: expected 'CLK <tag> <launches> <cycles> <nanoseconds> <blocks>'"):
            sm_clock.parse(["", "CLK demo 99 1 2"])
        with self.assertRaisesRegex(ValueError, r"^line 1: expected"):
            sm_clock.parse(["CLK demo 99 1 2 x"])
        with self.assertRaisesRegex(ValueError, r"^line 1: expected"):
            sm_clock.parse(["CLK demo 99 1 2 3 4"])
        for falling in (line(199, 90, 200, 2), line(199, 200, 90, 2), line(199, 200, 200, 0)):
            with self.assertRaisesRegex(ValueError, r"^line 2: tag demo's totals fall while its launches grow"):
                sm_clock.parse([line(99, 100, 100, 1), falling])


class CommandLineTest(unittest.TestCase):
    def write(self, lines):
        return write_log(self, lines)

    def test_each_run_reported(self):
        log = self.write([*TUNE, *BENCH])
        result = run(log)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            f"{log}: demo (run 1 of 2): launches 99 to 399, 300 blocks (mean 10.00 us): SM clock 1.9000 GHz"
            " (between neighbouring lines 1.8000 to 2.0000)",
            f"{log}: demo (run 2 of 2): launches 99 to 199, 10 blocks (mean 10.00 us): SM clock 1.5000 GHz"
            " (between neighbouring lines 1.5000 to 1.5000)",
        ])

    def test_one_line_and_no_blocks_say_why(self):
        log = self.write([line(99, 100, 100, 1)])
        self.assertEqual(run(log).stdout.strip(), f"{log}: demo: one CLK line (launches 99): two are needed for a rate")
        log = self.write([line(99, 100, 100, 1), line(199, 100, 100, 1)])
        self.assertEqual(run(log).stdout.strip(), f"{log}: demo: launches 99 to 199: no block counted between them")
        log = self.write([line(99, 100, 100, 1), line(199, 300, 200, 1)])  # time passed, but no block ended
        self.assertEqual(run(log).stdout.strip(), f"{log}: demo: launches 99 to 199: no block counted between them")

    def test_no_lines_missing_file_and_malformed_line(self):
        result = run(self.write(["nothing here"]))
        self.assertEqual(result.returncode, 1)
        self.assertIn("no 'CLK ' line in", result.stderr)
        missing = run("/nonexistent/sm_clock.log")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("No such file", missing.stderr)
        log = self.write(["CLK demo 99"])
        result = run(log)
        self.assertEqual(result.returncode, 1)
        self.assertTrue(result.stderr.startswith(f"sm_clock: {log}: line 1: expected"), result.stderr)

    def test_a_log_without_lines_does_not_stop_the_others(self):
        empty, good = self.write(["nothing here"]), self.write(BENCH)
        result = run(empty, good)
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"no 'CLK ' line in {empty}", result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            f"{good}: demo: launches 99 to 199, 10 blocks (mean 10.00 us): SM clock 1.5000 GHz (between neighbouring lines 1.5000 to 1.5000)"])


if __name__ == "__main__":
    unittest.main()
