# SPDX-License-Identifier: Apache-2.0
"""The differential checker (compare.py) on recorded outputs: the recorded pair
passes; a changed value, a crash, a missing END, a duplicate key, a value
outside its entry, an entry that excuses nothing and a loose list each fail.
Also checks that known_differences.txt itself is well formed. No GPU needed.

  compare_test.py"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

DATA = os.path.join(HERE, "testdata")


def read(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


class Checker(unittest.TestCase):
    def run_checker(self, nvidia=None, ufile=None, known=None):
        """(exit code, printed text) for the recorded files with replacements."""
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, text in (("nvidia.txt", nvidia), ("ufile.txt", ufile), ("known.txt", known)):
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(read(name) if text is None else text)
                paths.append(path)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = compare.main(paths)
            return rc, out.getvalue()

    def assertFails(self, expect, **files):
        rc, text = self.run_checker(**files)
        self.assertEqual(rc, 1, text)
        self.assertIn(expect, text)

    def test_the_recorded_pair_passes(self):
        rc, text = self.run_checker()
        self.assertEqual(rc, 0, text)
        self.assertIn("0 problems", text)

    def test_a_changed_value_and_a_crash_fail(self):
        ufile = read("ufile.txt").replace("driver.open1 err=0 cu=0", "driver.open1 err=5001 cu=0")
        ufile = ufile.replace("slabs.END exit 0",
                              "slabs.END crashed: signal 11 (Segmentation fault)")
        rc, text = self.run_checker(ufile=ufile)
        self.assertEqual(rc, 1, text)
        self.assertIn("DIFFER driver.open1", text)
        self.assertIn("ufile: slabs.END crashed: signal 11", text)

    def test_a_changed_value_fails(self):
        ufile = read("ufile.txt").replace("version_props.version err=0 cu=0 v=1150",
                                          "version_props.version err=0 cu=0 v=1140")
        self.assertFails("DIFFER version_props.version", ufile=ufile)

    def test_a_crash_fails_though_both_crash_alike(self):
        crash = "slabs.END crashed: signal 11 (Segmentation fault)"
        self.assertFails("slabs.END crashed",
                         nvidia=read("nvidia.txt").replace("slabs.END exit 0", crash),
                         ufile=read("ufile.txt").replace("slabs.END exit 0", crash))

    def test_a_crash_under_an_excused_key_fails(self):
        known = read("known.txt") + "~^stats\\.open\\..*$\t~^.*$\t~^.*$\tanything\n"
        ufile = read("ufile.txt").replace("stats.open.at1.l2 err=5022 cu=0 nonzero_bytes=0",
                                          "stats.open.at1.l2 crashed: signal 6 (Aborted)")
        self.assertFails("ufile: stats.open.at1.l2 crashed", ufile=ufile, known=known)

    def test_a_missing_end_fails(self):
        ufile = read("ufile.txt").replace("stats.END exit 0\n", "")
        self.assertFails("ufile: 3 END lines for 4 cases", ufile=ufile)

    def test_a_failed_exit_fails(self):
        ufile = read("ufile.txt").replace("driver.END exit 0", "driver.END exit 3")
        self.assertFails("ufile: driver.END exit 3", ufile=ufile)

    def test_no_case_count_fails(self):
        nvidia = read("nvidia.txt").replace("probe.cases 4\n", "")
        self.assertFails("nvidia: no 'probe.cases N' line", nvidia=nvidia)

    def test_a_case_without_a_gpu_fails(self):
        ufile = read("ufile.txt").replace("probe.cases 4", "probe.cases 5") + \
            "batch.cuda no usable GPU\nbatch.END exit 0\n"
        nvidia = read("nvidia.txt").replace("probe.cases 4", "probe.cases 5") + \
            "batch.cuda no usable GPU\nbatch.END exit 0\n"
        self.assertFails("batch.cuda no usable GPU: the case compared nothing",
                         nvidia=nvidia, ufile=ufile)

    def test_a_duplicate_key_fails(self):
        ufile = read("ufile.txt").replace("driver.open1 err=0 cu=0",
                                          "driver.open1 err=0 cu=0\ndriver.open1 err=0 cu=0")
        self.assertFails("ufile: driver.open1 printed twice", ufile=ufile)

    def test_a_value_outside_its_entry_fails(self):
        ufile = read("ufile.txt").replace("driver.implicit.count use_count=1",
                                          "driver.implicit.count use_count=2")
        self.assertFails("DIFFER driver.implicit.count", ufile=ufile)
        ufile = read("ufile.txt").replace("slabs.set.size6 err=5022 cu=0",
                                          "slabs.set.size6 err=5003 cu=0")
        self.assertFails("DIFFER slabs.set.size6", ufile=ufile)

    def test_a_missing_line_fails(self):
        ufile = read("ufile.txt").replace("stats.reset err=0 cu=0\n", "")
        self.assertFails("DIFFER stats.reset\n  nvidia: err=0 cu=0\n  ufile:  (no line)",
                         ufile=ufile)

    def test_an_entry_that_excuses_nothing_fails(self):
        known = read("known.txt") + "driver.open1\terr=0 cu=0\terr=5001 cu=0\tnot so\n"
        self.assertFails("excused no difference", known=known)

    def test_loose_lists_are_refused(self):
        base = read("known.txt")
        for line, expect in (
                ("props\terr=0 cu=0\terr=0 cu=0\tunanchored\n", "is not a step key"),
                ("~props\t~^.*$\t~^.*$\tunanchored\n", "is not anchored"),
                ("~^stats\\..*$\t~.*\t~^.*$\tunanchored value\n", "is not anchored"),
                ("slabs.END\texit 0\texit 1\tend\n", "is not a step key"),
                ("stats.reset\terr=0 cu=0\tcrashed: signal 11\tcrash\n", "never excused"),
                ("stats.reset\terr=0 cu=0\n", "want KEY, NVIDIA, UFILE, REASON"),
                ("driver.implicit.count\tuse_count=0\tuse_count=1\tagain\n", "listed twice")):
            with self.subTest(line=line):
                self.assertFails(expect, known=base + line)

    def test_a_pattern_over_end_lines_fails(self):
        known = read("known.txt") + "~^slabs\\.(END|nothing)$\t~^.*$\t~^.*$\tends\n"
        self.assertFails("covers slabs.END: never excused", known=known)

    def test_ufile_values_are_checked_alone(self):
        def check(ufile):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "ufile.txt")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(ufile)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    rc = compare.main(["--check-ufile", path, os.path.join(DATA, "known.txt")])
                return rc, out.getvalue()
        no_gpu = "probe.cases 5\nbatch.cuda unavailable\nbatch.END exit 0\n"
        ufile = read("ufile.txt").replace("probe.cases 4\n", no_gpu)
        rc, text = check(ufile)
        self.assertEqual(rc, 0, text)
        rc, text = check(ufile.replace("slabs.set.size0 err=5022", "slabs.set.size0 err=0"))
        self.assertEqual(rc, 1, text)
        self.assertIn("slabs.set.size0: ufile gives 'err=0 cu=0'", text)

    def test_a_pattern_matches_whole_keys_and_values(self):
        """Top-level alternation inside ^...$ must not escape the anchors."""
        changed = read("ufile.txt").replace("stats.reset err=0 cu=0", "stats.reset err=5 cu=0")
        known = read("known.txt") + "~^stats\\.re|stats\\.zzz$\t~^.*$\t~^.*$\twide key\n"
        self.assertFails("DIFFER stats.reset", ufile=changed, known=known)
        known = read("known.txt") + "stats.reset\terr=0 cu=0\t~^err=5|nothing$\twide value\n"
        self.assertFails("DIFFER stats.reset", ufile=changed, known=known)
        rc, text = self.run_checker(ufile=changed.replace("err=5 cu=0", "err=5"), known=known)
        self.assertEqual(rc, 0, text)

    def test_machine_dependent_values_pass_on_every_gpu_machine(self):
        """NVIDIA's ranges of the device cache and pinned memory follow the
        GPU's memory: the project's list allows what H100 and H200 report."""
        entries = compare.load_list(os.path.join(HERE, "known_differences.txt"))
        ufile = {"param_get.closed.minmax6": "err=0 cu=0 min=4 max=1073741824",
                 "param_get.closed.minmax8": "err=0 cu=0 min=4 max=2147483648",
                 "param_get.open.minmax6": "err=0 cu=0 same",
                 "param_get.open.minmax8": "err=0 cu=0 same"}
        for machine, most in (("H100", 134217728), ("H200", 268435456)):
            nvidia = {"param_get.closed.minmax6": f"err=0 cu=0 min=0 max={most}",
                      "param_get.closed.minmax8": f"err=0 cu=0 min=64 max={most}",
                      "param_get.open.minmax6": "err=0 cu=0 same",
                      "param_get.open.minmax8": "err=0 cu=0 same"}
            problems = []
            for e in entries:
                e["used"] = 0
            compare.compare(nvidia, ufile, entries, problems, [], [])
            differ = [p for p in problems if not p.startswith("list line")]
            self.assertEqual(differ, [], machine)

    def test_the_project_list_is_well_formed(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = compare.main(["--check-list", os.path.join(HERE, "known_differences.txt")])
        self.assertEqual(rc, 0, out.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=2)
