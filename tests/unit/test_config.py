import pytest
from pydantic import ValidationError

from langchain_md_memory import MemoryConfig


def test_defaults_match_the_design_table():
    cfg = MemoryConfig()
    # Weights, min-score, decay floor and MMR threshold were chosen on the quality harness (bench/QUALITY.md).
    assert (cfg.max_results, cfg.min_score, cfg.fusion) == (6, None, "weighted")  # None: 0.45 on relevance
    assert (cfg.vector_weight, cfg.text_weight) == (0.5, 0.5)
    assert (cfg.temporal_decay.floor, cfg.mmr.duplicate_threshold) == (0.8, 0.5)
    assert cfg.temporal_decay.newer_first == 0.8
    assert cfg.candidate_multiplier == 4
    assert (cfg.chunk_tokens, cfg.chunk_overlap_tokens) == (400, 80)
    assert cfg.max_session_context_tokens == 2000
    assert cfg.watch_debounce_ms == 1500
    assert cfg.temporal_decay.enabled is True and cfg.temporal_decay.half_life_days == 30
    assert cfg.mmr.enabled is True and cfg.mmr.lambda_ == 0.7


def test_nested_dict_overrides_only_the_keys_it_names():
    cfg = MemoryConfig(temporal_decay={"half_life_days": 7}, mmr={"enabled": False})
    assert cfg.temporal_decay.half_life_days == 7
    assert cfg.temporal_decay.enabled is True
    assert cfg.mmr.enabled is False
    assert cfg.mmr.lambda_ == 0.7


def test_lambda_accepts_its_alias_and_field_name():
    assert MemoryConfig(mmr={"lambda": 0.5}).mmr.lambda_ == 0.5
    assert MemoryConfig(mmr={"lambda_": 0.4}).mmr.lambda_ == 0.4


def test_merged_deep_merges_on_top_of_a_non_default_config():
    base = MemoryConfig(max_results=3, mmr={"enabled": False})
    out = base.merged(mmr={"lambda": 0.5}, min_score=0.2)
    assert out.max_results == 3
    assert out.min_score == 0.2
    assert out.mmr.enabled is False
    assert out.mmr.lambda_ == 0.5
    assert base.min_score is None  # the original is untouched


@pytest.mark.parametrize(
    "bad",
    [
        {"max_results": 0},
        {"mmr": {"lambda": 1.5}},
        {"temporal_decay": {"half_life_days": 0}},
        {"chunk_tokens": 100, "chunk_overlap_tokens": 100},
        {"unknown_key": 1},
        {"vector_weight": 0, "text_weight": 0},
        {"vector_dtype": "bfloat16"},
    ],
)
def test_invalid_values_are_refused_with_a_validation_error(bad):
    with pytest.raises(ValidationError):
        MemoryConfig(**bad)


def test_seed_ranking_restores_the_specification_formulas():
    from langchain_md_memory.config import SEED_RANKING

    seed = MemoryConfig(**SEED_RANKING)
    assert (seed.fusion, seed.min_score) == ("weighted_raw", 0.1)
    assert (seed.vector_weight, seed.text_weight) == (0.7, 0.3)
    assert seed.temporal_decay.floor == 0.0 and seed.mmr.duplicate_threshold == 0.0
    assert seed.temporal_decay.newer_first == 1.0  # the specs order by score and decay only


def test_vector_dtype_reaches_the_index(tmp_path):
    from langchain_md_memory import MarkdownMemory

    with MarkdownMemory(tmp_path, embeddings="none", config={"vector_dtype": "int8"}) as mem:
        assert mem.index.vector_dtype == "int8"
    assert MemoryConfig().vector_dtype == "float32"
