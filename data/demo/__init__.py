"""Demo inputs: data, read with importlib.resources."""
