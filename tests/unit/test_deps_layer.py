"""The layers' build inputs: the deps lock is pinned and hashed, ships nothing the code does not import, and a
build without python3.13 fails instead of shipping without .pyc (``PYC_OPTIONAL=1`` builds without, for local use).

`make sam-build` (in ``make test``) builds both layers for real; this checks what that build cannot see.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPS = ROOT / "layers" / "deps"
SHIPPED = [ROOT / "layers" / "shared" / "python", ROOT / "functions"]


def _lock() -> dict[str, list[str]]:
    """name -> sha256 hashes, from requirements-lock.txt (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", (DEPS / "requirements-lock.txt").read_text())
    entries: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert found, f"not pinned with a sha256 hash: {line!r}"
        entries[found.group(1).lower()] = re.findall(r"sha256:([0-9a-f]{64})", found.group(3))
    return entries


def _requirements() -> set[str]:
    names = set()
    for line in (DEPS / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[=<>!~\[ ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_every_locked_package_is_pinned_with_a_hash_and_installed_in_hash_checking_mode():
    lock = _lock()
    assert lock and all(hashes for hashes in lock.values())
    assert _requirements() <= set(lock)
    assert "--require-hashes" in (DEPS / "Makefile").read_text()


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for root in SHIPPED:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module.split(".")[0])
    return names


def test_powertools_is_not_shipped_since_nothing_imports_it():
    assert "aws_lambda_powertools" not in _imported_top_levels()
    assert not {"aws-lambda-powertools", "jmespath", "typing-extensions"} & (set(_lock()) | _requirements())


def test_each_required_package_is_imported_by_the_shipped_code():
    imported = _imported_top_levels()
    modules = {"cryptography": "cryptography", "lxml": "lxml", "jsonpath-ng": "jsonpath_ng", "regex": "regex"}
    assert set(modules) == _requirements()
    assert {module for module in modules.values() if module not in imported} == set()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_layer_build_without_python313_fails_unless_told_otherwise(tmp_path):
    shared = ROOT / "layers" / "shared"
    refused = subprocess.run(["make", "-C", str(shared), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path / 'a'}",
                              "PYC_PYTHON="], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "error: no python3.13 interpreter" in refused.stderr
    allowed = subprocess.run(["make", "-C", str(shared), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path / 'b'}",
                              "PYC_PYTHON=", "PYC_OPTIONAL=1"], capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0 and "ships without .pyc" in allowed.stdout
    assert not list((tmp_path / "b").rglob("*.pyc"))
    deps_makefile = (DEPS / "Makefile").read_text()
    assert "error: no python3.13 interpreter" in deps_makefile and "exit 1" in deps_makefile
