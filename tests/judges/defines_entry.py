"""A weak command verifier for the tests and the docs (docs/benchmarks.md): PASS when the candidate (the file given as
the first argument) compiles and defines the function named by the second argument, else FAIL.
It never runs the candidate, so certification should expose it: it accepts every wrong program
that still defines the function."""
import ast
import sys

path, entry = sys.argv[1], sys.argv[2]
try:
    tree = ast.parse(open(path, encoding="utf-8").read())
except (SyntaxError, ValueError):
    print("FAIL")
    sys.exit(0)
defined = any(isinstance(n, ast.FunctionDef) and n.name == entry for n in tree.body)
print("PASS" if defined else "FAIL")
