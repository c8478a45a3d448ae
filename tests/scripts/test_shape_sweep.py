"""scripts/shape_sweep.py on tests/data/ncu/tune_sweep.csv: what `ncu --csv --metrics ...` printed
over `klab tune` of conv.box_pixel_lanes on 8K RGB box31 (H200, 2026-11-30; klab's own output first,
then the CSV), trimmed to five launches of two shapes; and on small CSVs written here."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "ncu" / "tune_sweep.csv"
SCRIPT = ROOT / "scripts" / "shape_sweep.py"
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(SCRIPT.parent))
import shape_sweep  # noqa: E402

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def row(launch, kernel, block, grid, metric, unit, value):
    return f'"{launch}","1","klab","host","{kernel}","1","7","{block}","{grid}","0","9.0","Command line profiler metrics","{metric}","{unit}","{value}"'


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False)


class Table(unittest.TestCase):
    def test_a_real_tune_run_gives_one_line_per_shape_with_its_medians(self):
        result = run(FIXTURE, "--input-mb", 99.5328)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["kernel", "block", "grid", "warps", "launches", "read", "MB", "x", "input", "written", "MB",
                                            "time", "us", "L2", "hit", "%"])
        # Launches 0, 1, 2: 32x2 blocks, 4320 of them; read 113127168, 112902144, 113248768 bytes,
        # 129152, 127136, 128096 ns. Launches 20, 21: 32x4 blocks, 2160; read 112578560 and
        # 111486464, 128992 and 128512 ns (the median of two is their mean).
        first = lines[1].split()
        self.assertEqual(first[0], "conv_box_pixel_lanes_kernel<3,")
        self.assertEqual(" ".join(first[2:5]), "(32, 2, 1)")
        self.assertEqual(first[-7:], ["8640", "3", "113.1", "1.14", "79.5", "128.1", "75.5"])
        second = lines[2].split()
        self.assertEqual(" ".join(second[2:5]), "(32, 4, 1)")
        self.assertEqual(second[-7:], ["8640", "2", "112.0", "1.13", "79.5", "128.8", "75.6"])
        self.assertEqual(len(lines), 3)

    def test_without_the_input_size_there_is_no_multiple_of_it(self):
        result = run(FIXTURE)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("x input", result.stdout)
        self.assertEqual(result.stdout.splitlines()[1].split()[-6:], ["8640", "3", "113.1", "79.5", "128.1", "75.5"])

    def test_scaled_units_are_read_in_base_units(self):
        text = "\n".join([HEADER,
                          row(0, "void k(int)", "(128, 1, 1)", "(10, 1, 1)", "dram__bytes_read.sum", "Mbyte", "2.50"),
                          row(0, "void k(int)", "(128, 1, 1)", "(10, 1, 1)", "gpu__time_duration.sum", "usecond", "3.25"),
                          row(1, "void k(int)", "(128, 1, 1)", "(10, 1, 1)", "dram__bytes_read.sum", "Kbyte", "1,500"),
                          row(1, "void k(int)", "(128, 1, 1)", "(10, 1, 1)", "gpu__time_duration.sum", "msecond", "0.001")])
        found = shape_sweep.launches(text)
        self.assertAlmostEqual(found["0"][3]["dram__bytes_read.sum"], 2.5e6)
        self.assertAlmostEqual(found["0"][3]["gpu__time_duration.sum"], 3.25e-6)
        self.assertAlmostEqual(found["1"][3]["dram__bytes_read.sum"], 1.5e6)
        self.assertAlmostEqual(found["1"][3]["gpu__time_duration.sum"], 1e-6)
        # Only the metrics the run has become columns; 40 warps of 128 x 10 threads.
        lines = shape_sweep.table(found).splitlines()
        self.assertEqual(lines[0].split(), ["kernel", "block", "grid", "warps", "launches", "read", "MB", "time", "us"])
        self.assertEqual(lines[1].split()[-4:], ["40", "2", "2.0", "2.1"])

    def test_shapes_are_grouped_by_block_and_grid_and_listed_most_warps_first(self):
        # A twice (64 x 10 threads: 20 warps), then B (A's grid, another block: 10 warps), then C
        # (A's block, another grid: 40 warps).
        shapes = [(0, "(64, 1, 1)", "(10, 1, 1)", 100), (1, "(32, 1, 1)", "(10, 1, 1)", 200), (2, "(64, 1, 1)", "(10, 1, 1)", 300),
                  (3, "(64, 1, 1)", "(20, 1, 1)", 400)]
        text = "\n".join([HEADER] + [row(launch, "void k(int)", block, grid, "gpu__time_duration.sum", "ns", f"{ns * 1000}")
                                      for launch, block, grid, ns in shapes])
        lines = [line.split() for line in shape_sweep.table(shape_sweep.launches(text)).splitlines()[1:]]
        self.assertEqual([(line[-3], line[-2], line[-1]) for line in lines], [("40", "1", "400.0"), ("20", "2", "200.0"),
                                                                              ("10", "1", "200.0")])

    def test_a_shape_without_a_metric_shows_a_dash_in_every_column_of_it(self):
        text = "\n".join([HEADER,
                          row(0, "void k(int)", "(32, 1, 1)", "(2, 1, 1)", "dram__bytes_read.sum", "byte", "2,000,000"),
                          row(1, "void k(int)", "(32, 1, 1)", "(1, 1, 1)", "gpu__time_duration.sum", "ns", "5,000")])
        lines = shape_sweep.table(shape_sweep.launches(text), input_mb=1.0).splitlines()
        self.assertEqual(lines[0].split()[-6:], ["read", "MB", "x", "input", "time", "us"])
        self.assertEqual(lines[1].split()[7:], ["2", "1", "2.0", "2.00", "-"])
        self.assertEqual(lines[2].split()[7:], ["1", "1", "-", "-", "5.0"])


class Errors(unittest.TestCase):
    def check_refused(self, text, *args, says):
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "run.csv"
            path.write_text(text)
            result = run(path, *args)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(says, result.stderr)
        self.assertEqual(result.stdout, "")

    def test_output_without_ncu_csv_is_refused_with_the_reason(self):
        self.check_refused("tuning 1 job(s) on NVIDIA H200\n", says="was ncu run with --csv --metrics?")

    def test_a_run_with_a_bad_row_is_refused_with_what_was_wrong(self):
        # (launch, block, metric, unit, value) of the run's one row, and what the refusal says.
        cases = [((0, "(32, 1, 1)", "sm__cycles_elapsed.avg", "cycle", "100"), "none of the metrics"),
                 ((0, "(32, 1, 1)", "dram__bytes_read.sum", "furlong", "1"), "unit 'furlong'"),
                 ((7, "(32, 1, 1)", "dram__bytes_read.sum", "byte", "n/a"), "launch 7, dram__bytes_read.sum: 'n/a' is not a number"),
                 ((0, "(32, 1)", "dram__bytes_read.sum", "byte", "1"), "'(32, 1)' is not of the form (x, y, z)")]
        for (launch, block, metric, unit, value), says in cases:
            with self.subTest(says=says):
                self.check_refused("\n".join([HEADER, row(launch, "void k(int)", block, "(1, 1, 1)", metric, unit, value)]), says=says)

    def test_the_input_size_must_be_a_finite_positive_number(self):
        for size in (0, -1, "nan", "inf"):
            result = run(FIXTURE, "--input-mb", size)
            self.assertNotEqual(result.returncode, 0, size)
            self.assertIn("a finite number > 0", result.stderr)

    def test_a_missing_file_is_refused(self):
        result = run(ROOT / "no-such-file.csv")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no-such-file.csv", result.stderr)


if __name__ == "__main__":
    unittest.main()
