"""The package's structure stays one-way: imports run down the layers, never up,
and no modules import each other in a circle. Imports are read with `ast`; type-only imports
(under `if TYPE_CHECKING:`) do not count."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reactive_spark"

#: From the bottom up; a module may import its own layer and the layers below it.
LAYERS: list[set[str]] = [
    {"errors", "_validation", "_callbacks", "_collector", "_libc"},
    {"time", "clock", "offsets", "failures", "blocking"},
    {"events", "listener", "runtime", "deadlines", "running_output"},
    {"sources", "operators"},
    {"dependencies", "dstream", "log"},
    {"jobs"},
    {"graph", "planning"},
    {
        "waiting",
        "source_queue",
        "overflow",
        "catching_up",
        "ordering",
        "batch_runner",
        "scheduler",
        "loop_watchdog",
    },
    {
        "checkpoint",
        "checkpoint_lock",
        "rederive",
        "recovery",
        "virtual_time",
        "backfill",
        "lifecycle",
    },
    {"context"},
    {"testing", "web", "lineage", "demo", "cluster", "tracing"},
    {"cli", "__main__", "reactive_spark"},
]


#: The imports made inside a function on purpose, and why: what they load waits until it is
#: used, so that `import reactive_spark` loads no aiohttp, prometheus-client or rich.
LAZY = {
    ("reactive_spark.sources.definitions", "reactive_spark.sources.rest"): "aiohttp, for REST",
    ("reactive_spark.context", "reactive_spark.web.app"): "the console, for ssc.serve()",
    ("reactive_spark.cli.running", "reactive_spark.web"): (
        "the console, for --ui: a mistake answers fast"
    ),
}


def module_names() -> dict[str, Path]:
    """`reactive_spark.x.y` for every module of the package, with its path."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def layer(module: str) -> int:
    """The layer of `reactive_spark.<top>...`: its top-level part decides."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "reactive_spark"
    for number, members in enumerate(LAYERS):
        if top in members:
            return number
    raise AssertionError(f"{module} is in no layer of tests/test_layers.py")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(path: Path, modules: set[str]) -> list[tuple[str, int, bool]]:
    """`(module, line, local)` for every import of a package module that runs (not type-only).

    `local` marks an import inside a function.
    """
    tree = ast.parse(path.read_text())
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for orelse in child.orelse:
                    visit(orelse, local)
                continue
            inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    candidate = f"{child.module}.{alias.name}"
                    target = candidate if candidate in modules else child.module
                    if target in modules:
                        found.append((target, child.lineno, inner))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name in modules:
                        found.append((alias.name, child.lineno, inner))
            visit(child, inner)

    visit(tree, False)
    return found


def import_graph() -> dict[str, set[str]]:
    """What each module imports as it is imported (lazy imports run later, when used)."""
    names = module_names()
    return {
        module: {
            target
            for target, _, local in runtime_imports(path, set(names))
            if not (local and (module, target) in LAZY)
        }
        - {module}
        for module, path in names.items()
    }


def upward_imports() -> list[str]:
    names = module_names()
    found = []
    for module, path in names.items():
        for target, line, local in runtime_imports(path, set(names)):
            if layer(target) > layer(module) and not (local and (module, target) in LAZY):
                found.append(f"{module}:{line} imports {target}")
    return found


def cycles() -> list[list[str]]:
    """Groups of modules that import each other in a circle (Tarjan's algorithm)."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in graph:
        if node not in index:
            connect(node)
    return groups


def local_imports() -> list[str]:
    """Function-local imports of package modules (they hide cycles), but for those in LAZY."""
    names = module_names()
    return [
        f"{module}:{line} imports {target} inside a function"
        for module, path in names.items()
        for target, line, local in runtime_imports(path, set(names))
        if local and (module, target) not in LAZY
    ]


def test_every_module_is_in_a_layer() -> None:
    for module in module_names():
        layer(module)


def test_no_module_imports_from_a_higher_layer() -> None:
    assert upward_imports() == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycles() == []


def test_no_function_imports_a_package_module() -> None:
    assert local_imports() == []


def test_importing_the_package_loads_no_console_or_terminal_library() -> None:
    code = (
        "import sys, reactive_spark\n"
        "print(sorted(m for m in ('aiohttp', 'prometheus_client', 'rich') if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


#: Private attributes of other libraries the package reads, each with the reason there is no
#: public way: `(module, attribute)`.
FOREIGN_PRIVATES = {
    # CPython documents sys._current_frames as the way to see another thread's stack
    ("reactive_spark.loop_watchdog", "_current_frames"),
    # PySpark has no public route to Hadoop's FileSystem (saveAsTextFiles' atomic rename)
    ("reactive_spark.dstream.files", "_jvm"),
    ("reactive_spark.dstream.files", "_jsc"),
    # PySpark has no public way to ask whether a SparkContext is active without making one
    # (getOrCreate reads the same): the demo in a host must leave the host's context alone
    ("reactive_spark.demo", "_active_spark_context"),
    # PySpark has no public test of a stopped SparkContext; its stop() clears _jsc
    ("reactive_spark.context", "_jsc"),
    # an RDD subclass is built from the Java RDD it wraps, as PySpark's own subclasses are
    ("reactive_spark.offsets", "_jrdd"),
    ("reactive_spark.offsets", "_jrdd_deserializer"),
}
ATTRIBUTE_FUNCTIONS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reaches() -> list[str]:
    """Reads of private attributes a module does not define itself, by any spelling.

    A class's own code may use what it inherits (`self._x`, `cls._x`), and a module owns the
    private names it defines (`def _x`, `self._x = ...`, class-level `_x = ...`); reading any
    other private name of an object, as `obj._x` or through `getattr(obj, "_x")` and its kin,
    reaches into another module's (or library's) internals.
    """
    found = []
    for module, path in module_names().items():
        tree = ast.parse(path.read_text())
        owned: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                owned.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                owned.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                owned.add(node.id)
            elif isinstance(node, ast.arg):
                owned.add(node.arg)
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and _private(node.attr):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                name = node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ATTRIBUTE_FUNCTIONS
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
            ):
                name = node.args[1].value
                if node.func.id != "getattr" or name not in owned:
                    found.append(f"{module}:{node.lineno} {node.func.id}(..., {name!r})")
                    continue
            if name is not None and name not in owned and (module, name) not in FOREIGN_PRIVATES:
                found.append(f"{module}:{node.lineno} reads {name}")
    return found


def test_no_module_reaches_into_private_attributes_it_does_not_own() -> None:
    assert private_reaches() == []


def test_nothing_in_the_repository_cites_documents_outside_it() -> None:
    citation = re.compile(r"DESIGN|§|\bseeds?\b.{0,3}\d{3}|seeds/|\.\./shared")
    files = [
        path
        for pattern in ("*.md", "Makefile", "pyproject.toml", ".ci/*")
        for path in ROOT.glob(pattern)
    ] + [
        path
        for folder in ("reactive_spark", "tests", "docs", "examples", "benchmarks")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".md", ".js", ".css", ".html", ".txt", ".properties"}
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        if path != Path(__file__).resolve()  # the pattern itself
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if citation.search(line)
    ]
    assert found == []


def test_every_module_says_what_it_holds() -> None:
    silent = [
        module
        for module, path in module_names().items()
        if not (ast.get_docstring(ast.parse(path.read_text())) or "").strip()
    ]
    assert silent == []
