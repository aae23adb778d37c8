"""SQL migrations (numbered, applied in order) and views of the warehouse: data, read with importlib.resources."""
