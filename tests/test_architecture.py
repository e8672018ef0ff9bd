"""The house's rules (docs/contributing.md, "The house"), checked from the source so they cannot drift:
the arrows point one way, the leaf imports nothing of the project, storage owns the store's SQL,
only `tracker` reads the environment, and `tracker` is split into rooms."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("tracker", "collectors", "storage", "alerts")
# Who may import whom: a package imports itself, the ones below it and collectors.common.
ALLOWED = {
    "collectors": {"collectors"},
    "storage": {"storage", "collectors.common", "collectors.base"},
    "alerts": {"alerts", "storage", "collectors.common"},
    "tracker": {"tracker", "alerts", "storage", "collectors"},
}
LEAF = ROOT / "collectors" / "common.py"
# Words that only SQL run against the store would use, as method calls.
STORE_CALLS = {"execute", "executemany", "sql"}
MAX_FLAT_MODULES = 12


def modules(package: str) -> Iterator[Path]:
    yield from sorted((ROOT / package).rglob("*.py"))


def imported(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def project_imports(path: Path) -> set[str]:
    return {name for name in imported(path) if name.split(".")[0] in PACKAGES}


def allowed(name: str, rules: set[str]) -> bool:
    return any(name == rule or name.startswith(rule + ".") for rule in rules)


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_down_the_layers(package: str) -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules(package)
        for name in sorted(project_imports(path))
        if not allowed(name, ALLOWED[package])
    ]
    assert not wrong, "\n".join(wrong)


def test_the_leaf_imports_nothing_of_the_project() -> None:
    assert project_imports(LEAF) == set()


def store_calls(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in STORE_CALLS
        ):
            yield f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}()"


@pytest.mark.parametrize("package", ["tracker", "alerts", "collectors"])
def test_only_storage_talks_to_the_store(package: str) -> None:
    calls = [call for path in modules(package) for call in store_calls(path)]
    assert not calls, "SQL outside storage/:\n" + "\n".join(calls)


def test_transactions_are_only_begun_by_the_helper() -> None:
    begun = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in modules(package)
        if "BEGIN TRANSACTION" in path.read_text() and path.name != "connection.py"
    ]
    assert not begun


@pytest.mark.parametrize("package", ["collectors", "storage", "alerts"])
def test_only_tracker_reads_the_environment(package: str) -> None:
    readers = [
        str(path.relative_to(ROOT))
        for path in modules(package)
        if "os.environ" in path.read_text() or "getenv(" in path.read_text()
    ]
    assert not readers


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_is_split_into_rooms_before_it_sprawls(package: str) -> None:
    flat = [p for p in (ROOT / package).glob("*.py") if p.name != "__init__.py"]
    assert len(flat) <= MAX_FLAT_MODULES, [p.name for p in flat]
