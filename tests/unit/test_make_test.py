"""`make test` runs every target even when one fails, then says which failed (issue 26 item 3).

Driven through make itself: a makefile that includes the project's and adds three stand-in targets, with
TEST_TARGETS pointed at them. Nothing of the real suite runs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(not (ROOT / ".venv" / ".installed").exists() or not shutil.which("make"),
                                reason="needs make and the project's .venv (make venv)")


def _make_test(tmp_path: Path, targets: str) -> subprocess.CompletedProcess[str]:
    stand_ins = tmp_path / "stand-ins.mk"
    stand_ins.write_text(f"include {ROOT / 'Makefile'}\n"
                         "pass-a:\n\t@echo ran-a\nfail-b:\n\t@echo ran-b; false\npass-c:\n\t@echo ran-c\n")
    return subprocess.run(["make", "--no-print-directory", "-f", str(stand_ins), "test", f"TEST_TARGETS={targets}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_every_target_runs_after_a_failure_and_the_summary_names_it(tmp_path):
    done = _make_test(tmp_path, "pass-a fail-b pass-c")
    assert done.returncode != 0
    assert [line for line in done.stdout.splitlines() if line.startswith("ran-")] == ["ran-a", "ran-b", "ran-c"]
    assert re.search(r"^  pass-a: passed in \d+ s$", done.stdout, re.M)
    assert re.search(r"^  fail-b: FAILED in \d+ s$", done.stdout, re.M)
    assert re.search(r"^  pass-c: passed in \d+ s$", done.stdout, re.M)
    assert done.stdout.rstrip().endswith("make test FAILED: fail-b")


def test_all_passing_targets_exit_zero(tmp_path):
    done = _make_test(tmp_path, "pass-a pass-c")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("make test: every target passed")


def test_the_real_target_list_is_the_whole_suite():
    targets = re.search(r"^TEST_TARGETS := (.*)$", MAKEFILE, re.M).group(1).split()
    assert targets == ["lint", "unit", "integration", "e2e", "sam-validate", "template-lint", "sam-build",
                       "docs-build"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()
