"""The warehouse views, one per file: data, read with importlib.resources."""
