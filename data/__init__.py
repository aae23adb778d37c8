"""Demo inputs that ship with acceptgate: data, read with importlib.resources."""
