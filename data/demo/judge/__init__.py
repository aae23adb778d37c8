"""The judge demo inputs (see README.md): data, read with importlib.resources."""
