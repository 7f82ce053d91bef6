"""The README and the documentation site (docs/, mkdocs.yml): short README, links that resolve, no hard-coded port,
no internal references, and the strict build in `make test`. (`make docs-build` checks the site's own links and
anchors; this checks the README's too, which MkDocs never reads.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
USER_DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slugify(m.group(1).strip(), "-") for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, len(lines)


def test_the_readme_has_the_two_commands_the_walkthrough_and_where_to_go_next():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for heading in ("## The two commands", "## Walkthrough", "## Where to go next"):
        assert f"\n{heading}\n" in readme, heading
    assert "make run" in readme and "make test" in readme
    for audience in ("docs/integrators/index.md", "docs/operators/index.md", "docs/design/index.md"):
        assert f"]({audience})" in readme, audience


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    checked = 0
    for page in USER_DOCS:
        if not page.exists():
            continue
        for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.is_file(), f"{page.relative_to(ROOT)}: {target} does not exist"
            if anchor and resolved.suffix == ".md":
                assert anchor in _anchors(resolved), f"{page.relative_to(ROOT)}: {target}: no such heading"
            checked += 1
    assert checked > 50


def test_the_nav_lists_every_page_and_the_clients_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True and config["theme"]["name"] == "mkdocs"

    def files(node) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [f for item in node for f in files(item)]
        return [f for value in node.values() for f in files(value)]

    nav = files(config["nav"])
    assert "integrators/clients.md" in nav
    assert len(nav) == len(set(nav))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk <= set(nav), on_disk - set(nav)
    for audience in ("integrators/", "operators/", "design/"):
        assert any(f.startswith(audience) for f in nav), audience


def test_make_test_builds_the_docs_strictly_outside_the_repository_s_files():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_line = re.search(r"^TEST_TARGETS := (.*)$", makefile, re.M).group(1).split()
    assert "docs-build" in test_line
    build = re.search(r"^docs-build:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "mkdocs build --strict" in build and "$(DOCS_SITE)" in build
    assert re.search(r"^DOCS_SITE := \.local/site$", makefile, re.M)  # .local is ignored by git
    serve = re.search(r"^docs:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "mkdocs serve" in serve and "$(DOCS_PORT)" in serve
    assert re.search(r"^DOCS_PORT \?= (\d+)$", makefile, re.M).group(1) != "3000"  # not the runner's port
    assert ".local/" in (ROOT / ".gitignore").read_text().splitlines()
    assert re.search(r"^mkdocs==\d", (ROOT / "requirements-dev.txt").read_text(), re.M)


def test_examples_take_the_base_url_from_demo_json_not_a_hard_coded_port():
    for page in USER_DOCS:
        if page.exists():
            text = page.read_text(encoding="utf-8")
            assert not re.search(r"(?:127\.0\.0\.1|localhost):3000\b", text), page.relative_to(ROOT)
            for block in re.findall(r"```(?:sh|python)\n(.*?)```", text, re.S):  # commands call $BASE, not a port
                for url in re.findall(r"https?://127\.0\.0\.1:\d+\S*", block):  # the runner binds 127.0.0.1
                    assert "--aws-endpoint" in block, (page.relative_to(ROOT), url)


def test_user_docs_carry_no_internal_references():
    for page in USER_DOCS:
        if page.exists():
            text = page.read_text(encoding="utf-8")
            for pattern in (r"\b[Ii]ssue \d+", r"<!--", r"\bsession's runner\b", r"\bthis README\b"):
                assert not re.search(pattern, text), (page.relative_to(ROOT), pattern)
