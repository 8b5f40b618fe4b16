"""Benchmarks of langchain-md-memory: ``python -m bench [--quick]`` (see :mod:`bench.run`)."""
