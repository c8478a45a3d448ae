"""scripts/op_times.py on small CSVs written as `ncu --csv --print-units base` writes them: one row
per launch in launch order, the units of its columns, and the refusals (a missing metric, no CSV)."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "op_times.py"
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(SCRIPT.parent))
import op_times  # noqa: E402

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
# One launch's metrics in base units: 94.9 us, 224.6 MB read, 83.6 MB written, 36.0 M warp
# instructions, 38% issue, 128 registers, 23% of the warps; SCALED, the same in larger units.
FIGURES = [("gpu__time_duration.sum", "nsecond", "94,912"), ("dram__bytes_read.sum", "byte", "224,600,000"),
           ("dram__bytes_write.sum", "byte", "83,600,000"), ("sm__inst_executed.sum", "inst", "36,012,345"),
           ("sm__inst_issued.avg.pct_of_peak_sustained_active", "%", "38.2"), ("launch__registers_per_thread", "register/thread", "128"),
           ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "23.4")]
SCALED = [("gpu__time_duration.sum", "usecond", "94.912"), ("dram__bytes_read.sum", "Mbyte", "224.6"),
          ("dram__bytes_write.sum", "Kbyte", "83,600")] + FIGURES[3:]


def launch_rows(launch, kernel, figures=FIGURES):
    return [f'"{launch}","1","klab-tests-gpu","host","{kernel}","1","7","(32, 2, 1)","(16, 131, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"' for metric, unit, value in figures]


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False)


class OpTimes(unittest.TestCase):
    def write(self, folder, lines):
        path = pathlib.Path(folder) / "ncu.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def test_one_row_per_launch_in_launch_order_in_the_columns_units(self):
        with tempfile.TemporaryDirectory() as folder:
            # The test program's own output first, launch 10 before launch 9 in the file, a kernel
            # name with a comma (a template's arguments), and launch 11's time and bytes in larger
            # units than the others'.
            log = self.write(folder, ["[ RUN      ] OpsLargeImages.BoxVariantsOn8KRgbBox9And31", HEADER]
                             + launch_rows(10, "box_kernel<3, 1>") + launch_rows(9, "sums") + launch_rows(11, "scaled", SCALED))
            out = pathlib.Path(folder) / "op-times.csv"
            result = run(log, out)
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = out.read_text(encoding="utf-8").splitlines()
            self.assertEqual(result.stdout.splitlines(), lines)
        self.assertEqual(lines[0], "id,kernel,grid,block,time_us,dram_read_MB,dram_write_MB,warp_instructions_M,issue_active_pct,"
                                   "registers,achieved_occupancy_pct")
        figures = "94.9,224.6,83.6,36.01,38,128,23"
        self.assertEqual(lines[1:], [f'9,sums,"(16, 131, 1)","(32, 2, 1)",{figures}',
                                     f'10,"box_kernel<3, 1>","(16, 131, 1)","(32, 2, 1)",{figures}',
                                     f'11,scaled,"(16, 131, 1)","(32, 2, 1)",{figures}'])

    def test_a_launch_missing_a_metric_is_refused_not_written_as_zero(self):
        with tempfile.TemporaryDirectory() as folder:
            log = self.write(folder, [HEADER] + launch_rows(0, "sums") + launch_rows(1, "gather", FIGURES[:3] + FIGURES[4:]))
            out = pathlib.Path(folder) / "op-times.csv"
            result = run(log, out)
            self.assertFalse(out.exists())
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("launch 1 (gather) has no sm__inst_executed.sum", result.stderr)

    def test_output_without_a_csv_is_refused_with_the_reason(self):
        with tempfile.TemporaryDirectory() as folder:
            log = self.write(folder, ["==ERROR== the profiled process failed"])
            out = pathlib.Path(folder) / "op-times.csv"
            result = run(log, out)
            self.assertFalse(out.exists())
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stdout, "")
        self.assertIn("no Nsight Compute CSV in it", result.stderr)

    def test_a_missing_log_or_an_output_that_cannot_be_written_is_refused_with_its_path(self):
        with tempfile.TemporaryDirectory() as folder:
            missing = run(pathlib.Path(folder) / "none.log", pathlib.Path(folder) / "op-times.csv")
            log = self.write(folder, [HEADER] + launch_rows(0, "sums"))
            unwritable = run(log, pathlib.Path(folder) / "no-such-folder" / "op-times.csv")
        for result, path in ((missing, "none.log"), (unwritable, "no-such-folder")):
            self.assertNotEqual(result.returncode, 0)
            self.assertEqual(result.stdout, "")
            self.assertIn(path, result.stderr)

    def test_the_columns_are_the_metrics_op_times_sh_asks_for(self):
        script = (ROOT / "scripts" / "op-times.sh").read_text(encoding="utf-8")
        asked = set()
        for line in script.splitlines():
            if line.startswith("metrics="):
                asked.update(line.removeprefix("metrics=").split(","))
            elif line.startswith("metrics+=,"):
                asked.update(line.removeprefix("metrics+=,").split(","))
        self.assertEqual(asked, set(op_times.METRICS))


if __name__ == "__main__":
    unittest.main()
