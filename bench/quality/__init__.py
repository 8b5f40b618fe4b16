"""Retrieval-quality harness: R@5, R@10, MRR, top-1 and no-answer rate of the public search.

Two data sets: a bilingual development set committed under
``bench/quality_data/dev/`` and LoCoMo read from a local checkout (never
committed: it has no licence). See ``bench/QUALITY.md`` for the method and
the latest numbers, and :mod:`bench.quality.run` for the command line.
"""
