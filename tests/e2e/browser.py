"""Debian's chromium for the browser tests (moved here from test_checkout_browser.py, issue 19).

Chromium is Debian's ``chromium`` package (/usr/bin/chromium); the fixture installs it with apt-get when it is
missing. Nothing downloads a browser of its own: Playwright drives this one (``executable_path``) and
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 is set for every install of the ``playwright`` package.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

__all__ = ["CHROMIUM", "chromium"]

CHROMIUM = "/usr/bin/chromium"
os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


@pytest.fixture(scope="session")
def chromium():
    if not os.path.exists(CHROMIUM):
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.fail("chromium is missing and cannot be installed here (needs root and apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, capture_output=True,
                       timeout=1200)
    return CHROMIUM
