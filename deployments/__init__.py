"""Deployment files (prefect.yaml, the sandbox Dockerfile): data, read with importlib.resources."""
