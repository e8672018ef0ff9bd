"""The house's rules (docs/contributing.md, "The house"), checked from the source so they cannot
drift: the arrows point one way, the leaf imports nothing of the project, storage owns the store's
SQL, only `tracker` reads the environment, `tracker` is split into rooms, its layers (settings,
work, front doors) point down, and nothing in it imports in a circle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors import REGISTRY

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


# --- tracker/: settings at the bottom, the work in the middle, three front doors on top -------

TRACKER = ROOT / "tracker"
SETTINGS = "tracker.config"
DOORS = ("tracker.cli", "tracker.web", "tracker.daemon")
# The one exception to the door rule: the command line starts the daemon and the dashboard.
DOOR_ENTRIES = {"tracker.cli": {"tracker.daemon.entry", "tracker.web.server", "tracker.web.mcp"}}
MAX_ROOM_MODULES = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


TRACKER_MODULES = {module_name(path): path for path in modules("tracker")}


def tracker_imports(path: Path) -> set[str]:
    """The tracker modules `path` imports (`from tracker.web import settings`: the module
    tracker.web.settings, not the package), at any depth (type checking and lazy ones too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in TRACKER_MODULES else node.module)
    found = set()
    for name in names:
        while name and name not in TRACKER_MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("tracker."):
            found.add(name)
    return found


def tracker_graph() -> dict[str, set[str]]:
    """Module -> the tracker modules it imports."""
    return {name: tracker_imports(path) - {name} for name, path in TRACKER_MODULES.items()}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer(name: str) -> str:
    if name == "tracker.__main__":  # `python -m tracker`: the command line
        return "tracker.cli"
    if within(name, SETTINGS):
        return "settings"
    door = next((d for d in DOORS if within(name, d)), None)
    return door or "work"


def test_tracker_layers_point_down() -> None:
    """Settings import no other tracker layer; the work imports settings and other work; a
    door imports settings, the work and itself (the cli: the daemon's entry and the web
    server too)."""
    wrong = []
    for name, targets in sorted(tracker_graph().items()):
        mine = layer(name)
        for target in sorted(targets):
            theirs = layer(target)
            if mine == "settings":
                ok = theirs == "settings"
            elif mine == "work":
                ok = theirs in ("settings", "work")
            else:
                ok = theirs in ("settings", "work", mine) or target in DOOR_ENTRIES.get(mine, ())
            if not ok:
                wrong.append(f"{name} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_tracker_has_no_import_cycle() -> None:
    graph = tracker_graph()
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        done.add(name)
        return None

    cycle = next((found for name in sorted(graph) if (found := visit(name))), None)
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize(
    "room", sorted({p.parent for p in TRACKER.rglob("*.py")}), ids=lambda p: str(p.name)
)
def test_every_tracker_room_is_small(room: Path) -> None:
    found = [p.name for p in room.glob("*.py") if p.name != "__init__.py"]
    assert len(found) <= MAX_ROOM_MODULES, found


# --- collectors/: one name per provider, a package once it needs more than one module --------

SHARED_COLLECTOR_MODULES = {
    "base",
    "common",
    "http",
    "kit",
    "pages",
    "retrying",
    "gpus",
    "transfer",
}


def test_every_provider_has_one_name_and_a_package_when_it_spans_modules() -> None:
    for name, info in REGISTRY.items():
        module, _, _cls = info.target.partition(":")
        assert module == f"collectors.{name}", f"{name}: registered as {info.target}"
        package = ROOT / "collectors" / name
        assert package.is_dir() or (ROOT / "collectors" / f"{name}.py").is_file(), name
        assert (ROOT / "tests" / "fixtures" / name).is_dir(), f"{name}: no tests/fixtures/{name}"
    # No provider's code is spread flat over collectors/ (`aws_source.py`, `azure_parse.py`):
    # a second module makes it a package.
    flat = [p.stem for p in (ROOT / "collectors").glob("*.py") if p.stem != "__init__"]
    rooms = [p.name for p in (ROOT / "collectors").iterdir() if (p / "__init__.py").is_file()]
    strays = [m for m in flat if m not in SHARED_COLLECTOR_MODULES and m not in REGISTRY]
    assert not strays, f"modules of no provider and not shared: {strays}"
    assert set(rooms) <= set(REGISTRY) | SHARED_COLLECTOR_MODULES, rooms
