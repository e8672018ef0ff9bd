"""The house's measurable rules, read from the checkout (docs/contributing.md, "The house"):
small modules, a repository that explains itself, a release whose version agrees everywhere,
a test install without the extra runs' weight, and commit subjects that read as a list.

The layers and rooms themselves are checked by test_architecture.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("tracker", "collectors", "storage", "alerts")
MAX_LINES = 300
# Briefs kept outside the repository: a clone cannot follow a pointer to them.
OUTSIDE = re.compile(r"CONTRACT\.md|DESIGN\.md|\.\./shared")
# The first commit of the short-subject rule; earlier subjects are history as written.
SHORT_SUBJECTS_SINCE = "3b30a1b"
MAX_SUBJECT = 72
# What only the extra runs need (-m spark, -m browser): never in the test install.
HEAVY = ("pyspark", "playwright")


def _tracked() -> list[Path]:
    if shutil.which("git") and (ROOT / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        return [ROOT / line for line in out.splitlines() if (ROOT / line).is_file()]
    return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_the_house_limit(package: str) -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / package).rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_nothing_cites_a_document_the_repository_does_not_have() -> None:
    citing = []
    for path in _tracked():
        if path.name == "CHANGELOG.md" or path == Path(__file__):
            continue  # the changelog may tell the history; this file names the rule
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if OUTSIDE.search(text):
            citing.append(str(path.relative_to(ROOT)))
    assert not citing, f"files citing briefs kept outside the repository: {citing}"


def test_the_version_agrees_with_the_changelog() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    version = project["version"]
    released = re.findall(
        r"^## \[?(\d+\.\d+\.\d+)\]?", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE
    )
    assert released, "CHANGELOG.md has no released section (## X.Y.Z - date)"
    assert released[0] == version, f"pyproject says {version}, the changelog's newest {released[0]}"
    assert "0.1.0" in released, "the history before 0.2.0 is its own released section"


def test_the_test_install_leaves_out_the_extra_runs_weight() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras = project["optional-dependencies"]
    dev = " ".join(extras["dev"]).lower()
    assert not [name for name in HEAVY if name in dev], extras["dev"]
    for name in HEAVY:  # still installable for the runs that need them
        assert any(name in " ".join(deps).lower() for deps in extras.values()), name


def test_commit_subjects_read_as_a_list() -> None:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{SHORT_SUBJECTS_SINCE}^{{commit}}"], cwd=ROOT, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"{SHORT_SUBJECTS_SINCE} is not in this clone's history (a shallow clone)")
    subjects = subprocess.run(
        ["git", "log", "--format=%s", f"{SHORT_SUBJECTS_SINCE}^..HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    long = [s for s in subjects if len(s) > MAX_SUBJECT]
    assert not long, f"subjects over {MAX_SUBJECT} characters: {long}"
