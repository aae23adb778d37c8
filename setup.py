"""The one import root, ``acceptgate``: the user's top-level folders are mapped into it (``flows/`` imports
as ``acceptgate.flows``, ``sql/`` is the data package ``acceptgate.sql``, ...). Everything else is in
pyproject.toml; this file exists only because the package list is computed (pyproject.toml takes either a
fixed list or a find directive, not a find directive plus mapped folders)."""

from setuptools import find_namespace_packages, setup

# top-level folder -> the package it is inside acceptgate
MAPPED = {"flows": "acceptgate.flows", "tasks": "acceptgate.tasks", "sql": "acceptgate.sql",
          "expectations": "acceptgate.expectations", "deployments": "acceptgate.deployments",
          "data": "acceptgate.data"}


# data/ is also where runs write (the warehouse, suites folders): only its demo inputs ship
INCLUDE = {"data": ["demo", "demo.*"]}


def _mapped_packages() -> list[str]:
    found = []
    for folder, package in MAPPED.items():
        found.append(package)
        subs = find_namespace_packages(folder, include=INCLUDE.get(folder, ["*"]), exclude=["*__pycache__*"])
        found += [f"{package}.{sub}" for sub in subs]
    return found


setup(
    packages=find_namespace_packages(include=["acceptgate", "acceptgate.*"], exclude=["*__pycache__*"])
    + _mapped_packages(),
    package_dir={package: folder for folder, package in MAPPED.items()},
)
