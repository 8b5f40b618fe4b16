import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from langchain_md_memory import MemoryConfig
from langchain_md_memory.config import MOVED, SEED_RANKING, settings_table

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_defaults_match_the_design_table():
    cfg = MemoryConfig()
    ranking = cfg.ranking
    # Weights, min-score, decay floor and MMR threshold were chosen on the quality harness (bench/QUALITY.md).
    assert (cfg.max_results, ranking.min_score, ranking.fusion) == (6, None, "weighted")  # None: no cut
    assert (ranking.vector_weight, ranking.text_weight) == (0.5, 0.5)
    assert (ranking.temporal_decay.floor, ranking.mmr.duplicate_threshold) == (0.8, 0.5)
    assert ranking.temporal_decay.newer_first == 0.8
    assert ranking.candidate_multiplier == 4
    assert (cfg.chunking.chunk_tokens, cfg.chunking.chunk_overlap_tokens) == (400, 80)
    assert cfg.session.context_tokens == 2000
    assert cfg.index.watch_debounce_ms == 1500
    assert ranking.temporal_decay.enabled is True and ranking.temporal_decay.half_life_days == 30
    assert ranking.mmr.enabled is True and ranking.mmr.lambda_ == 0.7


def test_at_most_twelve_top_level_fields_each_group_a_model():
    assert len(MemoryConfig.model_fields) <= 12
    assert list(MemoryConfig.model_fields) == ["max_results", "ranking", "chunking", "embedding", "index",
                                               "limits", "hygiene", "session"]


def test_nested_dict_overrides_only_the_keys_it_names():
    cfg = MemoryConfig(ranking={"temporal_decay": {"half_life_days": 7}, "mmr": {"enabled": False}})
    assert cfg.ranking.temporal_decay.half_life_days == 7
    assert cfg.ranking.temporal_decay.enabled is True
    assert cfg.ranking.mmr.enabled is False
    assert cfg.ranking.mmr.lambda_ == 0.7
    assert cfg.ranking.vector_weight == 0.5  # a group given in part keeps its other defaults


def test_lambda_accepts_its_alias_and_field_name():
    assert MemoryConfig(ranking={"mmr": {"lambda": 0.5}}).ranking.mmr.lambda_ == 0.5
    assert MemoryConfig(ranking={"mmr": {"lambda_": 0.4}}).ranking.mmr.lambda_ == 0.4


def test_merged_deep_merges_on_top_of_a_non_default_config():
    base = MemoryConfig(max_results=3, ranking={"mmr": {"enabled": False}})
    out = base.merged(ranking={"mmr": {"lambda": 0.5}, "min_score": 0.2})
    assert out.max_results == 3
    assert out.ranking.min_score == 0.2
    assert out.ranking.mmr.enabled is False
    assert out.ranking.mmr.lambda_ == 0.5
    assert base.ranking.min_score is None  # the original is untouched


@pytest.mark.parametrize(
    "bad",
    [
        {"max_results": 0},
        {"ranking": {"mmr": {"lambda": 1.5}}},
        {"ranking": {"temporal_decay": {"half_life_days": 0}}},
        {"chunking": {"chunk_tokens": 100, "chunk_overlap_tokens": 100}},
        {"unknown_key": 1},
        {"ranking": {"unknown_key": 1}},
        {"ranking": {"vector_weight": 0, "text_weight": 0}},
        {"index": {"vector_dtype": "bfloat16"}},
    ],
)
def test_invalid_values_are_refused_with_a_validation_error(bad):
    with pytest.raises(ValidationError):
        MemoryConfig(**bad)


@pytest.mark.parametrize(
    ("given", "named", "suggested"),
    [
        ({"max_result": 3}, "max_result", "max_results"),
        ({"ranking": {"min_scor": 0.2}}, "ranking.min_scor", "ranking.min_score"),
        ({"chunk_size": 200}, "chunk_size", "chunking.chunk_tokens"),  # a name of another group
        ({"ranking": {"chunk_token": 200}}, "ranking.chunk_token", "chunking.chunk_tokens"),
        ({"ranking": {"mmr": {"lamda": 0.5}}}, "ranking.mmr.lamda", "ranking.mmr.lambda"),
        ({"limits": {"max_write_byte": 10}}, "limits.max_write_byte", "limits.max_write_bytes"),
    ],
)
def test_an_unknown_setting_names_the_closest_one_by_its_full_path(given, named, suggested):
    with pytest.raises(ValidationError) as caught:
        MemoryConfig(**given)
    message = str(caught.value)
    assert f"unknown setting {named!r}" in message and f"did you mean {suggested}?" in message
    assert "Extra inputs are not permitted" not in message
    with pytest.raises(ValidationError, match=re.escape(f"did you mean {suggested}?")):
        MemoryConfig.model_validate(given)  # what MarkdownMemory(config={...}) does
    with pytest.raises(ValidationError, match=re.escape(f"did you mean {suggested}?")):
        MemoryConfig().merged(**given)


def test_an_unknown_setting_close_to_none_points_to_the_settings_page():
    with pytest.raises(ValidationError) as caught:
        MemoryConfig(zebra=1)
    message = str(caught.value)
    assert "unknown setting 'zebra'" in message and "docs/settings.md" in message
    assert "did you mean" not in message


def test_seed_ranking_restores_the_specification_formulas():
    seed = MemoryConfig(**SEED_RANKING).ranking
    assert (seed.fusion, seed.min_score) == ("weighted_raw", 0.1)
    assert (seed.vector_weight, seed.text_weight) == (0.7, 0.3)
    assert seed.temporal_decay.floor == 0.0 and seed.mmr.duplicate_threshold == 0.0
    assert seed.temporal_decay.newer_first == 1.0  # the specs order by score and decay only


def test_vector_dtype_reaches_the_index(tmp_path):
    from langchain_md_memory import MarkdownMemory

    with MarkdownMemory(tmp_path, embeddings="none", config={"index": {"vector_dtype": "int8"}}) as mem:
        assert mem.index.vector_dtype == "int8"
    assert MemoryConfig().index.vector_dtype == "float32"


# -- the flat keywords of earlier releases ----------------------------------------------

@pytest.mark.parametrize(("flat", "group", "leaf"), [(k, *v) for k, v in MOVED.items()])
def test_every_flat_keyword_still_works_and_names_its_new_place(flat, group, leaf):
    value = getattr(getattr(MemoryConfig(), group), leaf)  # its default: valid wherever it goes
    with pytest.warns(DeprecationWarning, match=rf"MemoryConfig\({flat}=\.\.\.\) is deprecated: use "
                                                rf"MemoryConfig\({group}=\{{'{leaf}': \.\.\.\}}\)"):
        cfg = MemoryConfig(**{flat: value})
    assert getattr(getattr(cfg, group), leaf) == value
    with pytest.warns(DeprecationWarning, match=rf"MemoryConfig\.{flat} is deprecated: use "
                                                rf"MemoryConfig\.{group}\.{leaf}"):
        assert getattr(cfg, flat) == value
    with pytest.warns(DeprecationWarning, match=rf"MemoryConfig\({flat}=\.\.\.\)"):
        assert getattr(getattr(MemoryConfig().merged(**{flat: value}), group), leaf) == value


def test_flat_keywords_mix_with_groups_and_land_where_the_new_form_does():
    with pytest.warns(DeprecationWarning):
        old = MemoryConfig(max_results=3, min_score=0.3, mmr={"enabled": False}, ranking={"rrf_k": 5},
                           chunk_tokens=200, embedding_retries=0, max_session_context_tokens=500)
    new = MemoryConfig(max_results=3, ranking={"min_score": 0.3, "mmr": {"enabled": False}, "rrf_k": 5},
                       chunking={"chunk_tokens": 200}, embedding={"retries": 0},
                       session={"context_tokens": 500})
    assert old == new


def test_a_flat_keyword_warns_at_the_callers_line():
    with pytest.warns(DeprecationWarning) as caught:
        MemoryConfig(min_score=0.3)
    assert caught[0].filename == __file__


def test_the_settings_page_holds_the_table_the_field_docstrings_make():
    table = settings_table()
    assert table in SETTINGS_PAGE.read_text(encoding="utf-8"), (
        "docs/settings.md differs from the field docstrings: paste settings_table()'s output there (python "
        "-c 'from langchain_md_memory.config import settings_table; print(settings_table())')")
    rows = re.findall(r"^\| `([a-z_.]+)` \|", table, re.M)
    assert len(rows) == len(set(rows)) > 40  # every setting, once
    assert all(text.strip() for text in re.findall(r"^\| `[a-z_.]+` \| `[^`]*` \|(.*)\|$", table, re.M))
