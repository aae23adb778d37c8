"""The layers of the code, checked on the syntax tree of every file (so an import anywhere in a module,
even lazily inside a function, counts):

- one import root: the distribution installs the package ``acceptgate`` and nothing else beside it; the
  command line (``acceptgate.cli``), the Prefect flows and tasks (``acceptgate.flows``, ``acceptgate.tasks``,
  from the top-level ``flows/`` and ``tasks/`` folders) are inside it;
- the core never reaches up: no module of the core (``acceptgate/`` but the command line) imports the
  command line, the flows, the tasks or Prefect itself;
- the domain packages compute: no module of ``gates/``, ``leak/``, ``v4v/``, ``judge/``, ``stats/`` or
  ``sources/`` imports the warehouse, the pipelines (the ledger among them) or DuckDB;
- one place writes run rows: only the run ledger writes a row of ``runs`` or of any ``*_runs`` table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import acceptgate

CORE = Path(acceptgate.__file__).parent
REPO = CORE.parent
TOP = ("cli",)  # above the core, inside acceptgate/ (flows/ and tasks/ are folders of their own)
LEDGER = CORE / "pipelines" / "ledger.py"
FORBIDDEN = ("acceptgate.cli", "acceptgate.flows", "acceptgate.tasks", "cli", "flows", "tasks", "prefect")
DOMAIN = ("gates", "leak", "v4v", "judge", "stats", "sources")
DOMAIN_FORBIDDEN = ("acceptgate.store", "acceptgate.pipelines", "duckdb")
MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")  # dotted: a bare word ("tasks") is mostly a key
WRITERS = {"replace_run_rows", "_insert_frame", "delete_run_rows", "_insert", "register"}


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


def named_modules(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string in the file that is a module name: one named as text is an import in
    disguise (importlib.import_module, find_spec, a table of flows to load)."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value)]


def violations(root: Path = CORE, packages: tuple[str, ...] | None = None,
               forbidden: tuple[str, ...] = FORBIDDEN) -> list[str]:
    """``file:line: imports module`` for each import of a ``forbidden`` module (or one under it) by a
    module of ``root`` -- of the sub-packages ``packages`` only, or of all but the command line."""
    found = []
    for path in sorted(root.rglob("*.py")):
        top = path.relative_to(root).parts[0]
        if packages is not None and top not in packages:
            continue
        if packages is None and top in TOP:
            continue
        for line, module in imported_modules(path, root) + named_modules(path):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(root.parent)}:{line}: imports {module}")
    return found


def test_the_core_imports_no_cli_flows_or_prefect():
    assert violations() == []


def test_one_import_root():
    """No top-level package but acceptgate: the command line is inside it, the flows and tasks folders
    are mapped into it. (The built wheel's contents are checked by tests/test_packaging.py.)"""
    import importlib.metadata

    assert importlib.metadata.distribution("acceptgate").read_text("top_level.txt").split() == ["acceptgate"]
    assert (CORE / "cli" / "__init__.py").is_file() and not (REPO / "cli").exists()
    import acceptgate.flows
    import acceptgate.tasks
    assert Path(acceptgate.flows.__file__).parent == REPO / "flows"
    assert Path(acceptgate.tasks.__file__).parent == REPO / "tasks"


def test_the_check_finds_a_lazy_import_and_a_module_named_as_text(tmp_path):
    pkg = tmp_path / "acceptgate"
    pkg.mkdir()
    (pkg / "core.py").write_text("def f():\n    from cli.score_cmd import load_suites\n")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "y.py").write_text("from ..cli import main\nimport acceptgate.flows.gate\n")
    (pkg / "sub" / "z.py").write_text("import importlib\nFLOW = 'acceptgate.flows.audit'\n"
                                      "def load():\n    return importlib.import_module(FLOW)\n")
    assert violations(pkg) == ["acceptgate/core.py:2: imports cli.score_cmd",
                     "acceptgate/core.py:2: imports cli.score_cmd.load_suites",
                     "acceptgate/sub/y.py:1: imports acceptgate.cli",
                     "acceptgate/sub/y.py:1: imports acceptgate.cli.main",
                     "acceptgate/sub/y.py:2: imports acceptgate.flows.gate",
                     "acceptgate/sub/z.py:2: imports acceptgate.flows.audit"]


# -- the domain packages compute; the pipelines do their warehouse I/O --------------------------------

def test_the_domain_packages_do_no_warehouse_io():
    assert violations(packages=DOMAIN, forbidden=DOMAIN_FORBIDDEN) == []


def test_the_domain_check_finds_warehouse_io(tmp_path):
    pkg = tmp_path / "acceptgate"
    for sub in ("leak", "pipelines", "stats"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "pipelines" / "leak.py").write_text("import duckdb\nfrom acceptgate.store import warehouse\n")  # may
    (pkg / "leak" / "store.py").write_text("def f(con):\n    import duckdb\n")
    (pkg / "leak" / "audit.py").write_text("from acceptgate.pipelines import ledger\nfrom acceptgate._util.hashing import x\n")
    (pkg / "stats" / "io.py").write_text("from ..store import warehouse\n")
    assert violations(pkg, packages=DOMAIN, forbidden=DOMAIN_FORBIDDEN) == [
        "acceptgate/leak/audit.py:1: imports acceptgate.pipelines",
        "acceptgate/leak/audit.py:1: imports acceptgate.pipelines.ledger",
        "acceptgate/leak/store.py:2: imports duckdb",
        "acceptgate/stats/io.py:1: imports acceptgate.store",
        "acceptgate/stats/io.py:1: imports acceptgate.store.warehouse"]


# -- one place writes run rows ----------------------------------------------------------------------

def run_tables() -> set[str]:
    """Every run family's table the migrations create: ``runs`` and each ``*_runs``."""
    found = set()
    for sql in (REPO / "sql").glob("*.sql"):
        found |= set(re.findall(r"create table (?:if not exists )?(\w*runs)\s*\(", sql.read_text(), re.I))
    return {t for t in found if t == "runs" or t.endswith("_runs")}


def _write_sql(tables: set[str]) -> re.Pattern:
    names = "|".join(sorted(tables))
    return re.compile(rf'\b(?:insert\s+(?:or\s+replace\s+)?into|replace\s+into|update|delete\s+from)\s+"?(?:{names})"?\b',
                      re.I)


def run_row_writes(source: str, tables: set[str]) -> list[str]:
    """What in this module's source writes a run table: an SQL write naming one (in any string or
    f-string part), or a frame write (``replace_run_rows``, ``_insert_frame``, ...) given one by name."""
    pattern = _write_sql(tables)
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value):
            found.append(f"line {node.lineno}: SQL {pattern.search(node.value).group(0)!r}")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in WRITERS:
                named = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in tables]
                if named:
                    found.append(f"line {node.lineno}: {name}(... {named[0]!r} ...)")
    return found


def test_the_detector_finds_the_ways_run_rows_used_to_be_written():
    tables = run_tables()
    assert {"runs", "gate_runs", "v4v_runs", "stats_runs", "judge_runs"} <= tables
    # the statements of the five former copies of the life cycle, and frame writes
    for source in ['SQL = """\ninsert into gate_runs by name\nselect * from f"""',
                   'con.execute("update runs set status = \'ok\' where run_id = ?", [r])',
                   'X = "insert or replace into stats_runs by name select *, now() as written_at from f"',
                   'con.execute(f"update v4v_runs set status = ? where run_id = ?", [s, r])',
                   'warehouse._insert_frame(con, "judge_runs", frame)',
                   'warehouse.replace_run_rows(con, run_id, {"gate_runs": frame})']:
        assert run_row_writes(source, tables), source
    for source in ['con.execute("insert into _published_runs values (?)", [r])',  # a temp table, no run family
                   'con.execute("select * from gate_runs where status = \'ok\'")',
                   'warehouse.replace_run_rows(con, run_id, {"gate_decisions": frame})']:
        assert not run_row_writes(source, tables), source


def test_only_the_ledger_writes_run_rows():
    tables = run_tables()
    places = {}
    for path in sorted(CORE.rglob("*.py")):
        found = run_row_writes(path.read_text(encoding="utf-8"), tables)
        if found:
            places[str(path.relative_to(REPO))] = found
    # the ledger writes a run's row through the table its family declares (pipelines/families.py), so
    # it has no literal write; it is the place that writes them, and the only one
    writers = {str(p.relative_to(REPO)) for p in CORE.rglob("*.py")
               if re.search(r"def _upsert_run_row|def _set_run_status", p.read_text())}
    assert places == {}, places
    assert set(places) | writers == {"acceptgate/pipelines/ledger.py"}
    # and no pipeline records attempts or publishes around it
    others = [str(p.relative_to(REPO)) for p in CORE.rglob("*.py") if p not in (LEDGER, CORE / "warehouse.py")
              and re.search(r"warehouse\.(begin_attempt|end_attempt|publish|record_stage)\(", p.read_text())]
    assert others == []


# -- the sandbox interface does not import its backends ---------------------------------------------

def test_the_sandbox_interface_imports_none_of_its_backends():
    imported = [m for _, m in imported_modules(CORE / "sandbox" / "backend.py", CORE)]
    assert [m for m in imported if m.startswith("acceptgate.")] == []


def test_every_builtin_backend_registers_itself_under_its_table_name():
    import importlib

    from acceptgate.sandbox import backend as backends

    for module in set(backends.BUILTIN_MODULES.values()):
        importlib.import_module(module)
    assert set(backends.names()) == set(backends.BUILTIN_MODULES)  # the Docker SDK is installed here
    for name, module in backends.BUILTIN_MODULES.items():
        assert backends._REGISTRY[name].__module__ == module, name
    try:
        backends.create("no-such-backend")
    except ValueError as exc:
        assert "valid backends: docker, local" in str(exc)
    else:
        raise AssertionError("an unknown backend name was accepted")


# -- one sha256 of a text ---------------------------------------------------------------------------

STANDALONE = {"v4v/evalplus_judge.py"}  # runs under EvalPlus's interpreter, never imports acceptgate


def text_hashes(source: str) -> list[int]:
    """Lines of ``hashlib.sha256(<text>.encode(...)).hexdigest()``: the sha256 of a text written again
    instead of ``acceptgate._util.hashing.sha256_text``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "hexdigest"
                and isinstance(node.func.value, ast.Call) and ast.unparse(node.func.value.func) == "hashlib.sha256"
                and node.func.value.args and isinstance(node.func.value.args[0], ast.Call)
                and isinstance(node.func.value.args[0].func, ast.Attribute)
                and node.func.value.args[0].func.attr == "encode"):
            found.append(node.lineno)
    return sorted(found)


def test_one_sha256_of_a_text():
    found = {str(p.relative_to(CORE)): text_hashes(p.read_text(encoding="utf-8")) for p in sorted(CORE.rglob("*.py"))
             if str(p.relative_to(CORE)) not in STANDALONE | {"_util/hashing.py"}}
    assert {p: lines for p, lines in found.items() if lines} == {}


def test_the_text_hash_check_finds_one_written_again():
    assert text_hashes("import hashlib\nx = hashlib.sha256(key.encode()).hexdigest()[:16]\n"
                       "y = hashlib.sha256(f'{a}'.encode('utf-8')).hexdigest()\n") == [2, 3]
    assert text_hashes("h = hashlib.sha256(b'x').hexdigest()\nd = hashlib.sha256(s.encode())\n") == []


# -- the layers: every module of the tree imports only from its own layer or lower ones -------------

LAYERS = (("_util",), ("suites",), ("sandbox",), ("datasets",), ("scoring",),
          ("sources", "gates", "leak", "v4v", "judge", "stats"), ("store",), ("pipelines",),
          ("service", "report"), ("cli", "flows", "tasks"))
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
TREE = ((CORE, "acceptgate"), (REPO / "flows", "acceptgate.flows"), (REPO / "tasks", "acceptgate.tasks"))


def tree_files(tree=TREE) -> dict[Path, tuple[str, Path]]:
    """Every module file of the package (``flows/`` and ``tasks/`` mapped in) -> its dotted name, folder."""
    found = {}
    for folder, name in tree:
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            found[path] = (".".join((name,) + parts).removesuffix(".__init__"), folder)
    return found


def layer_of(module: str) -> str | None:
    """The layer package a dotted module name belongs to (None: outside the package, or its root)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "acceptgate" and len(parts) > 1 and parts[1] in LAYER_OF else None


def import_edges(tree=TREE) -> list[tuple[str, str, str]]:
    """(file:line, importer's layer package, imported layer package) for every import between layer
    packages, lazy ones and module names written as text included."""
    edges = []
    for path, (name, folder) in tree_files(tree).items():
        mine = layer_of(name)
        for line, module in imported_modules(path, folder) + named_modules(path):
            theirs = layer_of(module)
            if mine and theirs and theirs != mine:
                edges.append((f"{path.relative_to(folder.parent)}:{line}", mine, theirs))
    return edges


def upward_imports(tree=TREE) -> list[str]:
    return sorted({f"{where}: {mine} imports {theirs}" for where, mine, theirs in import_edges(tree)
                   if LAYER_OF[theirs] > LAYER_OF[mine]})


def package_cycles(tree=TREE) -> list[str]:
    """Cycles between layer packages (of one layer: gates and v4v, say); none may exist."""
    import graphlib

    graph: dict[str, set[str]] = {}
    for _, mine, theirs in import_edges(tree):
        graph.setdefault(mine, set()).add(theirs)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return [" -> ".join(exc.args[1])]
    return []


def flat_modules(root: Path = CORE) -> list[str]:
    """Modules directly under acceptgate/ besides its root: every module is in a layer (``python -m`` too:
    acceptgate.cli's ``__main__``, so no module of the core names the CLI)."""
    return sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")


def test_no_module_imports_a_higher_layer():
    assert upward_imports() == []


def test_no_cycle_between_packages():
    assert package_cycles() == []


def test_every_module_is_in_a_layer():
    assert flat_modules() == []
    packages = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(LAYER_OF), packages - set(LAYER_OF)


def test_the_layer_checks_find_an_upward_import_a_cycle_and_a_flat_module(tmp_path):
    pkg = tmp_path / "acceptgate"
    for sub in ("_util", "suites", "gates", "v4v", "store"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "_util" / "errors.py").write_text("def f():\n    from acceptgate.suites import literals\n")
    (pkg / "gates" / "run.py").write_text("from acceptgate.v4v import pools\nfrom acceptgate.suites import render\n")
    (pkg / "v4v" / "pools.py").write_text("import acceptgate.gates.run\n")
    (pkg / "suites" / "render.py").write_text("X = 'acceptgate.store.warehouse'\n")
    (pkg / "score.py").write_text("")
    tree = ((pkg, "acceptgate"),)
    assert upward_imports(tree) == ["acceptgate/_util/errors.py:2: _util imports suites",
                                    "acceptgate/suites/render.py:1: suites imports store"]
    assert package_cycles(tree) and set(package_cycles(tree)[0].split(" -> ")) == {"gates", "v4v"}
    assert flat_modules(pkg) == ["score.py"]
