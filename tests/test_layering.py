"""The core package never reaches up: no module of ``acceptgate/`` (``acceptgate/cli`` and ``__main__``, the
command line's entry point, aside) imports the
command line, the Prefect flows and tasks, or Prefect itself -- not even lazily inside a function.
Walks the syntax tree of every file, so an import anywhere in a module counts."""

from __future__ import annotations

import ast
from pathlib import Path

import acceptgate

CORE = Path(acceptgate.__file__).parent
FORBIDDEN = ("acceptgate.cli", "flows", "tasks", "prefect")


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in the file of package ``root``."""
    package = ".".join((root.name,) + path.relative_to(root).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def violations(root: Path = CORE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in ("cli", "__main__.py"):
            continue
        for line, module in imported_modules(path, root):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
                found.append(f"{path.relative_to(root.parent)}:{line}: imports {module}")
    return found


def test_the_core_imports_no_cli_flows_or_prefect():
    assert violations() == []


def test_the_check_finds_a_lazy_import_inside_a_function(tmp_path):
    pkg = tmp_path / "acceptgate"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "cli" / "x.py").write_text("import prefect\n")  # the command line may
    (pkg / "core.py").write_text("def f():\n    from acceptgate.cli.score_cmd import load_suites\n")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "y.py").write_text("from ..cli import main\nimport flows.gate\n")
    assert violations(pkg) == ["acceptgate/core.py:2: imports acceptgate.cli.score_cmd",
                     "acceptgate/core.py:2: imports acceptgate.cli.score_cmd.load_suites",
                     "acceptgate/sub/y.py:1: imports acceptgate.cli",
                     "acceptgate/sub/y.py:1: imports acceptgate.cli.main",
                     "acceptgate/sub/y.py:2: imports flows.gate"]
