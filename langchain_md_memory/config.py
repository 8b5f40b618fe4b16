"""Configuration of a memory: retrieval defaults, chunking, decay, MMR.

Example:
    .. code-block:: python

        from langchain_md_memory import MemoryConfig

        cfg = MemoryConfig(max_results=3, temporal_decay={"half_life_days": 7})
        assert cfg.temporal_decay.enabled  # untouched keys keep their default
        assert cfg.mmr.lambda_ == 0.7
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import MemoryInputError

__all__ = ["SEED_RANKING", "MMRConfig", "MemoryConfig", "SourceWeights", "TemporalDecayConfig"]

SEED_RANKING: dict[str, Any] = {
    "fusion": "weighted_raw",
    "vector_weight": 0.7,
    "text_weight": 0.3,
    "min_score": 0.1,
    "temporal_decay": {"floor": 0.0, "newer_first": 1.0},
    "mmr": {"duplicate_threshold": 0.0},
    "question_weight": 1.0,
    "period_weight": 1.0,
    "speaker_weight": 1.0,
    "complete_keyword_scores": False,
}
"""Overrides that restore the specification's ranking formulas exactly: ``MemoryConfig(**SEED_RANKING)``.

The defaults differ where the quality harness (``bench/QUALITY.md``) measured
the seed's choices losing: raw-score merge, a min-score no hit ever fell
under, decay that buried old facts, MMR that demoted notes for sharing a topic.
"""


FusionSpec = Literal["weighted", "weighted_raw", "minmax", "rrf"] | Callable[..., dict[str, float]]
"""A fusion by name, or a function ``(vector, keyword, w_v, w_t) -> {chunk_id: score}``."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TemporalDecayConfig(_Frozen):
    """Stage 3: ``multiplier = floor + (1 - floor) · exp(-ln2 / half_life_days · age_days)``.

    ``floor`` is the least a dated note's score can be multiplied by: recency
    decides between comparably relevant hits, while an old note that alone
    holds a fact is not buried under unrelated evergreen text. ``floor=0`` is
    the seed's formula.
    """

    enabled: bool = True
    half_life_days: float = Field(30.0, gt=0)
    floor: float = Field(0.8, ge=0.0, le=1.0)
    newer_first: float = Field(0.8, ge=0.0, le=1.0)
    """A line the package wrote on a day (its ``src:`` comment, e.g. from ``supersede``) is newer
    than a log or note dated before: its hit, when it answers the query itself (relevance 0.45),
    takes the place of such a hit ranked above it when it scores at least this share of it (its
    score, above what stood between; the older one follows it, not buried). A hit dated before a
    fact was superseded that restates its old value gives its place to the replacement whatever
    the share (:mod:`langchain_md_memory.search.restated`). ``1.0`` turns both off."""


class MMRConfig(_Frozen):
    """Stage 4: maximal marginal relevance over the top ``pool_multiplier × k``.

    ``similarity`` compares hits by CJK-aware token-set Jaccard (default), by
    embedding cosine, or ``auto`` (cosine when every hit has a vector). Jaccard
    is the default because it measured better: e5-style embeddings put every
    note of one memory at cosine 0.8-1.0, so cosine barely tells a duplicate
    from a different note.
    """

    enabled: bool = True
    lambda_: float = Field(0.7, alias="lambda", ge=0.0, le=1.0)
    pool_multiplier: int = Field(2, ge=1)
    similarity: Literal["jaccard", "cosine", "auto"] = "jaccard"
    duplicate_threshold: float = Field(0.5, ge=0.0, lt=1.0)
    """Similarities below this count as 0: only near-duplicates are demoted."""


class SourceWeights(_Frozen):
    """Per-kind relevance multipliers (applied before decay); 1.0 is neutral."""

    evergreen: float = Field(1.0, ge=0.0)
    daily: float = Field(1.0, ge=0.0)
    session: float = Field(1.0, ge=0.0)


class MemoryConfig(_Frozen):
    """All tunables of a :class:`~langchain_md_memory.MarkdownMemory`.

    Nested ``temporal_decay`` / ``mmr`` / ``source_weights`` dicts override only
    the keys they name; :meth:`merged` does the same on top of an existing config.

    Example:
        .. code-block:: python

            cfg = MemoryConfig(mmr={"enabled": False})
            tighter = cfg.merged(min_score=0.3, mmr={"lambda": 0.5})
            assert tighter.mmr.enabled is False and tighter.mmr.lambda_ == 0.5
    """

    max_results: int = Field(6, ge=1)
    min_score: float | None = Field(None, ge=0.0)
    """Hits whose ``relevance`` (calibrated evidence, see ``search.relevance``) is lower are dropped.

    ``None`` (default): nothing is cut. A search returns its best candidates whenever
    a recall path found any, each labelled ``confident`` or not (relevance 0.45), so a
    stored answer with weak evidence still comes back, marked as weak. Set a number to
    cut (opt-in). With ``fusion="weighted_raw"`` it cuts the merged score, as in the seed."""
    recall_confident_only: bool = True
    """What is injected into the prompt unread (first-turn recall in the node and the middleware):
    only ``confident`` hits when True, since nobody weighs them there; the tools show every hit."""
    vector_weight: float = Field(0.5, ge=0.0)
    text_weight: float = Field(0.5, ge=0.0)
    fusion: FusionSpec = "weighted"
    """How the two recall pools merge (stage 1): a name or a function, see ``search.fusion``."""
    rrf_k: int = Field(60, ge=1)
    """The ``k`` of reciprocal-rank fusion (``fusion="rrf"``)."""
    candidate_multiplier: int = Field(4, ge=1)
    complete_keyword_scores: bool = True
    """A chunk the vector path recalled and keyword recall did not return (it ranked just below the
    keyword pool) still gets its keyword score, BM25 relative to the best hit, instead of none: its
    words count whichever pool it came from. False: the seed's merge of the two pools as returned."""
    cross_language: bool = True
    """Keyword search also looks for the question's words translated between Chinese and English
    (CC-CEDICT, with the ``local`` extra; see ``crosslingual``). Reading the dictionary costs the first
    such search in a process 0.2 s, then a few ms per English word looked up; False (``md-memory
    --no-cross-language``): off. A Chinese question reads the headwords either way, to cut itself into
    words (``retrieve.unseamed``)."""
    chunk_tokens: int = Field(400, ge=16)
    chunk_overlap_tokens: int = Field(80, ge=0)
    chunk_context_tokens: int = Field(128, ge=0)
    """A chunk shorter than half this (and than a quarter of ``chunk_tokens``) is embedded with this
    many tokens of its neighbouring lines (a transcript reply with the question before it); 0: off."""
    max_session_context_tokens: int = Field(2000, ge=0)
    watch_debounce_ms: int = Field(1500, ge=0)
    temporal_decay: TemporalDecayConfig = TemporalDecayConfig()
    mmr: MMRConfig = MMRConfig()
    source_weights: SourceWeights = SourceWeights()
    question_weight: float = Field(0.8, ge=0.0, le=1.0)
    """What a hit that only asks a question (its last line of prose ends with ``?``) scores, against
    an answer: a question kept in a transcript shares the words of the one asked, the reply holds
    the answer (LoCoMo, bench/QUALITY.md). 1.0: off. See ``search.focus``."""
    period_weight: float = Field(0.5, ge=0.0, le=1.0)
    """What a dated hit scores when the question names a period it is not dated in ("in March
    2025", "the week before 16 November", "上个月"; a note up to a week later still counts): its
    text's first full date or its log's day. Undated hits are left alone. 1.0: off."""
    speaker_weight: float = Field(0.7, ge=0.0, le=1.0)
    """What a line of a conversation (``Ann (2:05 pm on 3 May, 2023): …``, ``Ann: …``) scores when the
    question names one of the speakers among the hits and another says it: "what did Ann paint?" is
    answered by what Ann said (LoCoMo, bench/QUALITY.md). Lines without a speaker are left alone. 1.0: off."""
    # 0 keeps ranking neutral; > 0 boosts chunks by log1p(times returned).
    access_weight: float = Field(0.0, ge=0.0)
    embedding_batch_size: int = Field(32, ge=1)
    embedding_timeout_s: float = Field(15.0, gt=0)
    embedding_retries: int = Field(2, ge=0)
    vector_dtype: Literal["float32", "float16", "int8"] = "float32"
    """How the in-memory vector matrix holds vectors. ``int8`` (4x smaller: 1M chunks of 384 dimensions
    in 684 MB RSS against 1.77 GB) or ``float16`` (2x); their candidates are re-scored with the stored
    float32 vectors, so the top 24 matched float32's on every query of bench/vectors_compact.py. A
    compact scan is several times slower (numpy widens each block to float32 first), so float32 stays
    the default; choose ``int8`` when the matrix would not fit in memory."""
    stat_check_max_files: int = Field(300, ge=0)
    """How a search without a healthy watcher finds edits made outside the package; 0: it does not.

    Up to this many files, every search walks the folder first (one ``os.scandir`` pass, about
    3 µs a file, so under a millisecond at 300). Above it, a search stats only the folders (one
    ``stat`` each: any file created, removed or renamed, every write of this package in any
    process, moves one) and walks when one moved, or a second after the last walk (ten times its
    duration if longer) for edits made in place, so the walk costs at most a tenth of the
    searching time. A running, healthy watcher replaces both."""
    # Limits on what a write may bring in and what the index reads (a search never stalls on a
    # huge file): each error names the limit it hit.
    max_write_bytes: int = Field(1_000_000, ge=1)
    """Most UTF-8 bytes one append, edit or write may add."""
    max_query_chars: int = Field(1_000_000, ge=1)
    """Longer queries are refused. Shorter ones cost at most the embedder's input window (the head
    of the query) and ``MAX_QUERY_TERMS`` keyword terms (its most informative): a pasted document is
    answered from that bounded form, and the search's note says so."""
    max_file_bytes: int = Field(10_000_000, ge=1)
    """Larger Markdown files are not indexed (``status()["skipped_files"]`` says which and why)."""
    max_path_depth: int = Field(16, ge=1, le=64)
    """Most folders a memory file may sit in below the memory folder."""
    max_name_bytes: int = Field(255, ge=8, le=255)
    """Longest file or folder name, in UTF-8 bytes (255 is what file systems allow)."""
    # Hygiene of what the package writes (see README "Hygiene").
    redact_writes: bool = True
    """Replace secrets by ``[redacted: <kind>]`` in every text the memory's write methods take."""
    redact_kinds: tuple[Literal["email", "phone", "card"], ...] = ("card",)
    """Personal data redacted too: card numbers (Luhn-checked) by default; add ``email``, ``phone``."""
    redact_patterns: dict[str, str] = Field(default_factory=dict)
    """Your own patterns, ``{label: regex}``; a group named ``secret`` limits what is replaced."""
    dedup: Literal["off", "file", "memory"] = "file"
    """Facts already stated are not appended again: checked in the target file, in every memory file
    (sessions excepted), or not at all."""
    provenance: bool = True
    """Facts the package writes for an agent (tools, flush, dream) end with ``<!-- src: ... -->``."""
    dedup_threshold: float = Field(0.85, gt=0.0, le=1.0)
    """Token-set Jaccard at which two facts count as the same (1.0: only equal after normalising)."""

    @model_validator(mode="after")
    def _check_overlap(self) -> MemoryConfig:
        if self.chunk_overlap_tokens >= self.chunk_tokens:
            raise MemoryInputError(
                f"chunk_overlap_tokens ({self.chunk_overlap_tokens}) must be smaller "
                f"than chunk_tokens ({self.chunk_tokens})"
            )
        if self.vector_weight + self.text_weight <= 0:
            raise MemoryInputError("vector_weight + text_weight must be positive")
        for label, regex in self.redact_patterns.items():
            try:
                re.compile(regex)
            except re.error as exc:
                raise MemoryInputError(f"redact_patterns[{label!r}] is not a valid regex: {exc}") from exc
        return self

    def merged(self, **overrides: Any) -> MemoryConfig:
        """Return a copy with ``overrides`` deep-merged (nested dicts key by key)."""
        base = self.model_dump(by_alias=True)
        return MemoryConfig.model_validate(_deep_merge(base, overrides))


def _deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, BaseModel):
            value = value.model_dump(by_alias=True)
        if key == "lambda_":
            key = "lambda"
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            value = {("lambda" if k == "lambda_" else k): v for k, v in value.items()}
            out[key] = _deep_merge(current, value)
        else:
            out[key] = value
    return out
