"""The wheel is the product: built from this checkout, installed into a fresh virtualenv in a temp
directory outside it, it runs the main commands with nothing of the checkout on its path.

The venv sees the machine's installed dependencies (``--system-site-packages``: installing them again
would cost minutes and test pip, not acceptgate) but not the checkout's editable install: a
``sitecustomize`` drops the editable finder, so a file missing from the wheel is an ImportError or a
missing-resource error here, never a silent read from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NO_CHECKOUT = """\
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
"""
# what must ship beside the code: the data packages, read with importlib.resources
DATA = ("acceptgate/sql/001_core.sql", "acceptgate/sql/views/latest_runs.sql", "acceptgate/expectations/executions.json",
        "acceptgate/deployments/Dockerfile", "acceptgate/sandbox/runner.py", "acceptgate/service/openapi.json",
        "acceptgate/data/demo/judge/cards.jsonl")


def wheel_problems(wheel: Path) -> list[str]:
    """What is wrong with a built wheel: a top-level name but acceptgate, a data file missing."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    problems = [f"top-level {t!r} beside acceptgate" for t in sorted(tops - {"acceptgate"})]
    return problems + [f"{d} missing" for d in DATA if d not in names]


# What a checkout holds beside its sources: never part of a wheel, and a stale setuptools build/ directory
# would be (setuptools copies a file into build/lib only when the source is newer than the copy there).
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "build", "site", "*.egg-info", "__pycache__", ".prefect",
                                    ".hypothesis", ".pytest_cache", ".schemathesis", ".benchmarks", "*.duckdb*")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    source = tmp_path_factory.mktemp("source") / "acceptgate"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)  # the sources as a fresh clone has them
    # pip's own build isolation: the build backend (setuptools, wheel) as pyproject.toml asks for it,
    # whatever the calling environment has
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=600, cwd=out)
    (found,) = out.glob("acceptgate-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "sitecustomize.py").write_text(NO_CHECKOUT)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    return root


def test_the_wheel_holds_one_package_and_its_data(wheel):
    assert wheel_problems(wheel) == []


def test_the_wheel_check_finds_a_stray_package_and_a_missing_file(tmp_path):
    bad = tmp_path / "bad.whl"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("acceptgate/__init__.py", "")
        z.writestr("cli/__init__.py", "")
        z.writestr("acceptgate-0.1.0.dist-info/RECORD", "")
    problems = wheel_problems(bad)
    assert problems[0] == "top-level 'cli' beside acceptgate"
    assert "acceptgate/sql/001_core.sql missing" in problems


def test_the_installed_wheel_runs_the_main_commands_outside_the_checkout(venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTGATE_WAREHOUSE", "PYTHONPATH"))}
    run = lambda *argv: subprocess.run([str(venv / "bin" / "acceptgate"), *argv], cwd=tmp_path, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=900)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import acceptgate.flows, acceptgate.sql; "
                            "print(acceptgate.flows.__file__, acceptgate.sql.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env=env)
    assert where.returncode == 0, where.stderr
    assert all(Path(p).is_relative_to(venv) for p in where.stdout.split())

    spec = tmp_path / "add.json"
    spec.write_text('{"dialect": "python-call/1", "entry_point": "add", '
                    '"cases": [{"args": "[1, 2]", "expected": "3"}]}')
    checked = run("spec", "check", str(spec))
    assert checked.returncode == 0 and '"valid": true' in checked.stdout, checked.stderr

    warehouse = tmp_path / "W.duckdb"
    audited = run("audit", "--limit", "2", "--warehouse", str(warehouse), "--quiet")
    assert audited.returncode == 0, audited.stderr[-3000:]
    counted = run("sql", "--warehouse", str(warehouse), "--format", "csv", "select count(*) from executions")
    assert counted.returncode == 0, counted.stderr
    assert int(counted.stdout.split()[-1]) > 0
