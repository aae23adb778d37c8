"""One Great Expectations suite per warehouse table: data, read with importlib.resources."""
