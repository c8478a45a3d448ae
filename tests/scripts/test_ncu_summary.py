"""scripts/ncu_summary.py on Nsight Compute pages kept in tests/data/ncu/: the details page of a
real profile (integral.tile_gather's two kernels on an H200, trimmed to the rows it reads) and a
SASS page written for the test in the page's format (its header copied from a real one)."""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "ncu"
SCRIPT = ROOT / "scripts" / "ncu_summary.py"
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(SCRIPT.parent))
import ncu_summary  # noqa: E402


def run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=False, env=env)


# A stand-in for Nsight Compute's `ncu -i REPORT --page ...`: the pages of tests/data/ncu, or a
# failure for a report whose name says "broken".
FAKE_NCU = f"""#!/bin/sh
case "$2" in *broken*) echo "cannot open $2" >&2; exit 1;; esac
case "$4" in details) cat "{DATA / 'integral_tile_gather.details.csv'}";; source) cat "{DATA / 'walk.sass.csv'}";; esac
"""


class Report(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)
        self.dir = pathlib.Path(self.folder.name)
        ncu = self.dir / "ncu"
        ncu.write_text(FAKE_NCU)
        ncu.chmod(0o755)
        self.env = dict(os.environ, PATH=f"{self.dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def test_both_pages_exported_beside_the_report_and_summarized(self):
        result = run("--report", self.dir / "prof.ncu-rep", env=self.env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("  Duration: 17.09 us", result.stdout)
        self.assertIn("walk_kernel<(int)3, (int)4>: 9,300 warp instructions", result.stdout)
        self.assertEqual((self.dir / "prof.details.csv").read_text(), (DATA / "integral_tile_gather.details.csv").read_text())
        self.assertEqual((self.dir / "prof.sass.csv").read_text(), (DATA / "walk.sass.csv").read_text())

    def test_a_failing_export_is_refused_with_ncus_reason(self):
        result = run("--report", self.dir / "broken.ncu-rep", env=self.env)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--page details --csv` failed (exit 1): cannot open", result.stderr)
        result = run("--report", self.dir / "prof.ncu-rep", env=dict(self.env, PATH=str(self.dir / "nowhere")))
        self.assertEqual(result.returncode, 2)
        self.assertIn("Nsight Compute's ncu must be on PATH", result.stderr)

    def test_a_report_and_pages_together_are_refused(self):
        self.assertEqual(run("--report", self.dir / "prof.ncu-rep", "--sass", DATA / "walk.sass.csv", env=self.env).returncode, 2)


class Details(unittest.TestCase):
    def test_each_launch_its_figures_and_busiest_pipe_in_order(self):
        result = run("--details", DATA / "integral_tile_gather.details.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        sums, gather = lines.index("integral_tile_sums_kernel<1>:"), lines.index("integral_tile_gather_kernel<1, unsigned long>:")
        self.assertLess(sums, gather)
        self.assertEqual(lines[sums + 1:gather], [
            "  Duration: 17.09 us", "  Elapsed Cycles: 24,967 cycle", "  SM Active Cycles: 20,714.86 cycle",
            "  Executed Instructions: 7,734,690 inst", "  Issue Slots Busy: 59.44 %", "  Registers Per Thread: 64 register/thread",
            "  Theoretical Occupancy: 50 %", "  Achieved Occupancy: 39.01 %", "  DRAM Throughput: 41.94 %",
            "  SM Frequency: 1.44 Ghz",  # the clock the profile ran at: Nsight's locked base clock here
            "  ALU is the highest-utilized pipeline (47.9%)",
        ])  # the page's row without a metric name is left out
        self.assertIn("  Issue Slots Busy: 34.43 %", lines[gather:])
        self.assertIn("  SM Frequency: 1.48 Ghz", lines[gather:])

    def test_a_file_that_is_not_the_details_page_is_refused_with_the_command_that_writes_one(self):
        result = run("--details", DATA / "walk.sass.csv")
        self.assertEqual(result.returncode, 2)
        self.assertIn("walk.sass.csv: not Nsight Compute's details page", result.stderr)
        self.assertIn("ncu -i REPORT --page details --csv", result.stderr)


class Sass(unittest.TestCase):
    def test_hottest_parts_and_their_opcodes(self):
        result = run("--sass", DATA / "walk.sass.csv")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            "walk_kernel<(int)3, (int)4>: 9,300 warp instructions",  # the section listed twice counts once
            "  6 instructions run 1,000 times each: 64.5% of them",
            "  2 instructions run 1,500 times each: 32.3% of them",
            "  3 instructions run 100 times each: 3.2% of them",
            "  the hottest 6, by opcode (share of the kernel's stall samples):",
            "    IMAD.MOV 2 (34%), SHF 1 (4%), LDS.128 1 (17%), IADD3.X 1 (4%), STG.128 1 (34%)",
            # every instruction's samples by reason, the kernel's seventh (branch_resolving, 1%) left out
            "  stall samples by reason: lg 34%, long_sb 25%, short_sb 17%, wait 10%, not_selected 8%, math 4%",
            "other_kernel: 20 warp instructions",  # no stall samples: no line of reasons
            "  2 instructions run 10 times each: 100.0% of them",
            "  the hottest 2, by opcode:",
            "    IADD3 1, EXIT 1",
        ])

    def test_parts(self):
        result = run("--sass", DATA / "walk.sass.csv", "--parts", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("  6 instructions run 1,000 times each: 64.5% of them", result.stdout)
        self.assertNotIn("1,500 times", result.stdout)
        self.assertEqual(run("--sass", DATA / "walk.sass.csv", "--parts", "0").returncode, 2)

    def test_a_file_that_is_not_the_sass_page_is_refused_and_the_details_still_printed(self):
        result = run("--details", DATA / "integral_tile_gather.details.csv", "--sass", DATA / "integral_tile_gather.details.csv")
        self.assertEqual(result.returncode, 2)
        self.assertIn("Duration: 17.09 us", result.stdout)
        self.assertIn("not Nsight Compute's SASS page", result.stderr)
        self.assertIn("--page source --csv --print-source sass", result.stderr)

    def test_broken_pages_are_refused_with_what_was_wrong(self):
        page = (DATA / "walk.sass.csv").read_text().splitlines()
        header = page[1]
        cases = {
            "": "empty (did `ncu -i REPORT --page source --csv --print-source sass` fail?)",
            "\x00\xff\xfe binary": "not a CSV text file",
            page[0] + "\n" + header.replace('"Instructions Executed"', '"Other"') + "\n" + page[2]:
                "has no 'Instructions Executed' column: profile with --set full, or at least --section SourceCounters",
            page[0] + "\n" + header + "\n" + page[2].replace('"100"', '"-5"', 1): "without a whole number of executions",
            page[0] + "\n" + header + "\n" + page[2].replace('"1"', '"many"', 1): "whose stall samples are not whole numbers",
            page[0] + "\n" + header + "\n" + ",".join(page[2].split(",")[:40]): "with 39 of the header's 67 columns",
        }
        with tempfile.TemporaryDirectory() as folder:
            for text, message in cases.items():
                path = pathlib.Path(folder) / "page.csv"
                path.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else b"\x00\xff\xfe binary")
                result = run("--sass", path)
                self.assertEqual(result.returncode, 2, (text[:40], result.stdout))
                self.assertIn(message, result.stderr)
                self.assertNotIn("Traceback", result.stderr)

    def test_a_missing_file_and_no_page_at_all(self):
        result = run("--sass", DATA / "no-such.csv")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no-such.csv", result.stderr)
        self.assertEqual(run().returncode, 2)


class Names(unittest.TestCase):
    def test_short_names(self):
        cases = {
            "void klab::<unnamed>::conv_box_warp_ring_kernel<(int)3, (int)4>(klab::ImageView<const unsigned char>, int)":
                "conv_box_warp_ring_kernel<(int)3, (int)4>",
            "void klab::<unnamed>::k<klab::<unnamed>::Op, (int)3>(int)": "k<klab::<unnamed>::Op, (int)3>",
            "a::b<c::d>::k<x::y>(z::w)": "k<x::y>",
            "kernel": "kernel",
        }
        for kernel, short in cases.items():
            self.assertEqual(ncu_summary.short_name(kernel), short)
        details_page = {  # the details page's names: no outer namespaces, an anonymous one as 'unnamed>'
            "void unnamed>::integral_tile_gather_kernel<1, unsigned long>(ImageView<T2>, unnamed>::Sums, Grid)":
                "integral_tile_gather_kernel<1, unsigned long>",
            "void unnamed>::k<unnamed>::Op, 3>(int)": "k<<unnamed>::Op, 3>",
            "void <unnamed>::box_lane_ring<4, 1>(const unsigned char *, int)": "box_lane_ring<4, 1>",  # at global scope
        }
        for kernel, short in details_page.items():
            self.assertEqual(ncu_summary.short_name(kernel, details_page=True), short)

    def test_busiest_pipe_with_a_kind(self):
        for pipe in ("ALU", "Tensor (INT)", "FMA (FP16)"):
            rule = f"{pipe} is the highest-utilized pipeline (85.0%) based on elapsed cycles in the workload."
            self.assertEqual(ncu_summary.BUSIEST_PIPE.search(rule).group(0), f"{pipe} is the highest-utilized pipeline (85.0%)")

    def test_opcodes(self):
        cases = {"@!P0 IMAD.MOV.U32 R1, RZ, RZ, R2": "IMAD.MOV", "IMAD.WIDE.U32 R2, R3, 0x4, R4": "IMAD.WIDE",
                 "IMAD R1, R2, R3, R4": "IMAD",
                 "SHF.R.U32.HI R5, RZ, 0x10, R6": "SHF", "LDG.E.U8.CONSTANT R1, desc[UR4][R2.64]": "LDG.U8",
                 "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]": "LDGSTS.128", "IMMA.16832.U8.U8 R4, R8, R12, R4": "IMMA",
                 "UIMAD.WIDE.U32 UR4, UR5, 0x4, URZ": "UIMAD.WIDE", "LEA.HI.X.SX32 R13, R2, R25, 0x1, P2": "LEA.HI.X", "": "?"}
        for source, op in cases.items():
            self.assertEqual(ncu_summary.opcode(source), op)


if __name__ == "__main__":
    unittest.main()
