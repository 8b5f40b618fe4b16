"""Configuration of a memory: one small model per part of the package that reads it.

:class:`MemoryConfig` holds ``max_results`` and seven groups, each read by one owner:
``ranking`` (the search pipeline), ``chunking`` and ``index`` (the indexer), ``embedding`` (the
embedding client), ``limits`` (every write and read bound), ``hygiene`` (what a write keeps) and
``session`` (what the agent is shown unasked). A nested dict overrides only the keys it names.
The flat keywords of earlier releases (``MemoryConfig(min_score=0.3)``, ``config.mmr``) still work
until 0.4, each with a ``DeprecationWarning`` naming its new place (:data:`MOVED`).

Example:
    .. code-block:: python

        from langchain_md_memory import MemoryConfig

        cfg = MemoryConfig(max_results=3, ranking={"temporal_decay": {"half_life_days": 7}})
        assert cfg.ranking.temporal_decay.enabled  # untouched keys keep their default
        assert cfg.ranking.mmr.lambda_ == 0.7
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from .errors import MemoryInputError

__all__ = [
    "MOVED", "SEED_RANKING", "ChunkingConfig", "EmbeddingConfig", "HygieneConfig", "IndexConfig",
    "LimitsConfig", "MMRConfig", "MemoryConfig", "RankingConfig", "SessionConfig", "SourceWeights",
    "TemporalDecayConfig", "settings_table",
]

SEED_RANKING: dict[str, Any] = {
    "ranking": {
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
    },
}
"""Overrides that restore the specification's ranking formulas exactly: ``MemoryConfig(**SEED_RANKING)``.

The defaults differ where the quality harness (``bench/QUALITY.md``) measured the specification's
choices losing: raw-score merge, a min-score no hit ever fell under, decay that buried old facts,
MMR that demoted notes for sharing a topic.
"""


FusionSpec = Literal["weighted", "weighted_raw", "minmax", "rrf"] | Callable[..., dict[str, float]]
"""A fusion by name, or a function ``(vector, keyword, w_v, w_t) -> {chunk_id: score}``."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              use_attribute_docstrings=True)


class TemporalDecayConfig(_Frozen):
    """Step 6 of a search: ``multiplier = floor + (1 - floor) · exp(-ln2 / half_life_days · age_days)``.

    Evergreen files are exempt; a daily log's age comes from its name, a session's from its indexing.
    """

    enabled: bool = True
    """Whether dated notes decay at all."""
    half_life_days: float = Field(30.0, gt=0)
    """Days after which a dated note's multiplier is half way down to ``floor``."""
    floor: float = Field(0.8, ge=0.0, le=1.0)
    """The least a dated note's score is multiplied by: recency decides between comparably relevant
    hits, while an old note that alone holds a fact is not buried under unrelated evergreen text.
    ``0`` is the specification's formula."""
    newer_first: float = Field(0.8, ge=0.0, le=1.0)
    """Step 9: a line the package wrote on a day (its ``src:`` comment, e.g. from ``supersede``) is
    newer than a log or note dated before: its hit, when it answers the query itself (relevance 0.45),
    takes the place of such a hit ranked above it when it scores at least this share of it (its
    score, above what stood between; the older one follows it, not buried). A hit dated before a
    fact was superseded that restates its old value gives its place to the replacement whatever
    the share. ``1.0`` turns both off."""


class MMRConfig(_Frozen):
    """Step 7 of a search: maximal marginal relevance over the top ``pool_multiplier × k``."""

    enabled: bool = True
    """Whether near-duplicate hits are demoted."""
    lambda_: float = Field(0.7, alias="lambda", ge=0.0, le=1.0)
    """Relevance against novelty: 1.0 ranks by relevance alone (``"lambda"`` in a dict)."""
    pool_multiplier: int = Field(2, ge=1)
    """MMR reorders the top ``pool_multiplier × max_results`` candidates."""
    similarity: Literal["jaccard", "cosine", "auto"] = "jaccard"
    """How two hits are compared: CJK-aware token-set Jaccard, embedding cosine, or ``auto`` (cosine
    when every hit has a vector). Jaccard because e5-style embeddings put every note of one memory at
    cosine 0.8-1.0, so cosine barely tells a duplicate from a different note."""
    duplicate_threshold: float = Field(0.5, ge=0.0, lt=1.0)
    """Similarities below this count as 0: only near-duplicates are demoted."""


class SourceWeights(_Frozen):
    """Per-kind relevance multipliers (step 5, before decay); 1.0 is neutral."""

    evergreen: float = Field(1.0, ge=0.0)
    """``MEMORY.md`` and topic files."""
    daily: float = Field(1.0, ge=0.0)
    """``YYYY-MM-DD.md`` logs."""
    session: float = Field(1.0, ge=0.0)
    """``sessions/*.md`` transcripts."""


class RankingConfig(_Frozen):
    """How a search ranks what it recalled: the pipeline's steps 1 to 9 (see ``search.pipeline``)."""

    min_score: float | None = Field(None, ge=0.0)
    """Step 4: hits whose ``relevance`` (calibrated evidence, see ``search.relevance``) is lower are
    dropped. ``None`` (default): nothing is cut. A search returns its best candidates whenever a
    recall path found any, each labelled ``confident`` or not (relevance 0.45), so a stored answer
    with weak evidence still comes back, marked as weak. Set a number to cut (opt-in). With
    ``fusion="weighted_raw"`` it cuts the merged score, as in the specification."""
    vector_weight: float = Field(0.5, ge=0.0)
    """Step 3: the vector path's weight in the merge (renormalised to the paths that returned hits)."""
    text_weight: float = Field(0.5, ge=0.0)
    """Step 3: the keyword path's weight in the merge."""
    fusion: FusionSpec = "weighted"
    """Step 3: how the two recall pools merge: a name or a function, see ``search.fusion``."""
    rrf_k: int = Field(60, ge=1)
    """The ``k`` of reciprocal-rank fusion (``fusion="rrf"``)."""
    candidate_multiplier: int = Field(4, ge=1)
    """Step 1: each recall path returns ``candidate_multiplier × max_results`` candidates."""
    complete_keyword_scores: bool = True
    """Step 1: a chunk the vector path recalled and keyword recall did not return (it ranked just below
    the keyword pool) still gets its keyword score, BM25 relative to the best hit, instead of none:
    its words count whichever pool it came from. False: the specification's merge of the two pools
    as returned."""
    cross_language: bool = True
    """Step 1: keyword search also looks for the question's words translated between Chinese and
    English (CC-CEDICT, with the ``local`` extra; see ``text.crosslingual``): the first such search in
    a process reads the dictionary, each English word is then looked up once. False
    (``md-memory --no-cross-language``): off. A Chinese question reads the headwords either way, to
    cut itself into words."""
    temporal_decay: TemporalDecayConfig = TemporalDecayConfig()
    """Steps 6 and 9: how dated notes lose weight, and newer statements first."""
    mmr: MMRConfig = MMRConfig()
    """Step 7: diversity among the top hits."""
    source_weights: SourceWeights = SourceWeights()
    """Step 5: a multiplier per kind of file."""
    question_weight: float = Field(0.8, ge=0.0, le=1.0)
    """Step 5: what a hit that only asks a question (its last line of prose ends with ``?``) scores,
    against an answer: a question kept in a transcript shares the words of the one asked, the reply
    holds the answer. 1.0: off."""
    period_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Step 5: what a dated hit scores when the question names a period it is not dated in ("in
    March 2025", "the week before 16 November", "上个月"; a note up to a week later still counts): its
    text's first full date or its log's day. Undated hits are left alone. 1.0: off."""
    speaker_weight: float = Field(0.7, ge=0.0, le=1.0)
    """Step 5: what a line of a conversation (``Ann (2:05 pm on 3 May, 2023): …``, ``Ann: …``) scores
    when the question names one of the speakers among the hits and another says it: "what did Ann
    paint?" is answered by what Ann said. Lines without a speaker are left alone. 1.0: off."""
    access_weight: float = Field(0.0, ge=0.0)
    """Step 5: > 0 boosts chunks by ``log1p(times returned)``; 0 keeps ranking neutral."""

    @model_validator(mode="after")
    def _check_weights(self) -> RankingConfig:
        if self.vector_weight + self.text_weight <= 0:
            raise MemoryInputError("ranking.vector_weight + ranking.text_weight must be positive")
        return self


class ChunkingConfig(_Frozen):
    """How the indexer cuts a Markdown file into chunks (see ``files.chunker``)."""

    chunk_tokens: int = Field(400, ge=16)
    """A chunk's size, in tokens (headings and paragraphs are kept whole where they fit)."""
    chunk_overlap_tokens: int = Field(80, ge=0)
    """Tokens a chunk shares with the one before it."""
    chunk_context_tokens: int = Field(128, ge=0)
    """A chunk shorter than half this (and than a quarter of ``chunk_tokens``) is embedded with this
    many tokens of its neighbouring lines (a transcript reply with the question before it); 0: off."""

    @model_validator(mode="after")
    def _check_overlap(self) -> ChunkingConfig:
        if self.chunk_overlap_tokens >= self.chunk_tokens:
            raise MemoryInputError(
                f"chunking.chunk_overlap_tokens ({self.chunk_overlap_tokens}) must be smaller "
                f"than chunking.chunk_tokens ({self.chunk_tokens})"
            )
        return self


class EmbeddingConfig(_Frozen):
    """How the embedding client calls the model."""

    batch_size: int = Field(32, ge=1)
    """Texts sent to the model in one call."""
    timeout_s: float = Field(15.0, gt=0)
    """Seconds one call to a network provider may take before it is retried (a search then answers from
    keywords); the bundled model runs in process and is never cut off."""
    retries: int = Field(2, ge=0)
    """Retries of a failed call, with backoff."""
    search_wait_s: float | None = Field(10.0, ge=0)
    """How long a search waits for new chunks to be embedded: a search that finds the Markdown changed
    (or never indexed) embeds for at most this long, then answers from what is indexed while the rest is
    embedded on a background thread; until then those chunks are found by keywords only, and the
    search's note says how many. ``None``: a search waits for every chunk. ``sync()`` and
    ``md-memory index`` always embed everything before they return."""


class IndexConfig(_Frozen):
    """How the index holds vectors and notices edits made outside the package."""

    vector_dtype: Literal["float32", "float16", "int8"] = "float32"
    """How the in-memory vector matrix holds vectors: ``int8`` is 4x smaller, ``float16`` 2x; their
    candidates are re-scored with the stored float32 vectors. A compact scan is slower (numpy widens
    each block to float32 first), so float32 stays the default; choose ``int8`` when the matrix would
    not fit in memory (figures: ``bench/RESULTS.md``)."""
    stat_check_max_files: int = Field(300, ge=0)
    """How a search without a healthy watcher finds edits made outside the package; 0: it does not.
    Up to this many files, every search walks the folder first (one ``os.scandir`` pass). Above it,
    a search stats only the folders and walks when one moved, or when a periodic walk is due, so the
    walk costs at most a tenth of the searching time. A running, healthy watcher replaces both."""
    watch_debounce_ms: int = Field(1500, ge=0)
    """The file watcher syncs this long after the last change it saw."""


class LimitsConfig(_Frozen):
    """What a write may bring in and what the index reads: each refusal names the limit it hit."""

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


class HygieneConfig(_Frozen):
    """What the package keeps out of, and adds to, what it writes."""

    redact_writes: bool = True
    """Replace secrets by ``[redacted: <kind>]`` in every text the memory's write methods take."""
    redact_kinds: tuple[Literal["email", "phone", "card"], ...] = ("card",)
    """Personal data redacted too: card numbers (Luhn-checked) by default; add ``email``, ``phone``."""
    redact_patterns: dict[str, str] = Field(default_factory=dict)
    """Your own patterns, ``{label: regex}``; a group named ``secret`` limits what is replaced."""
    dedup: Literal["off", "file", "memory"] = "file"
    """Facts already stated are not appended again: checked in the target file, in every memory file
    (sessions excepted), or not at all."""
    dedup_threshold: float = Field(0.85, gt=0.0, le=1.0)
    """Token-set Jaccard at which two facts count as the same (1.0: only equal after normalising)."""
    provenance: bool = True
    """Facts the package writes for an agent (tools, flush, dream) end with ``<!-- src: ... -->``."""

    @model_validator(mode="after")
    def _check_patterns(self) -> HygieneConfig:
        for label, regex in self.redact_patterns.items():
            try:
                re.compile(regex)
            except re.error as exc:
                raise MemoryInputError(
                    f"hygiene.redact_patterns[{label!r}] is not a valid regex: {exc}") from exc
        return self


class SessionConfig(_Frozen):
    """What the agent is shown without asking: the session context and the first turn's recall."""

    context_tokens: int = Field(2000, ge=0)
    """The session context's budget: ``MEMORY.md``, then today's and yesterday's logs, cut with a note."""
    recall_confident_only: bool = True
    """First-turn recall (the node and the middleware) injects only ``confident`` hits when True,
    since nobody weighs them there; the tools show every hit."""


class MemoryConfig(_Frozen):
    """All tunables of a :class:`~langchain_md_memory.MarkdownMemory`, grouped by the part that reads them.

    Nested dicts override only the keys they name; :meth:`merged` does the same on top of an
    existing config. The settings, with their defaults: ``docs/settings.md``.

    Example:
        .. code-block:: python

            cfg = MemoryConfig(ranking={"mmr": {"enabled": False}})
            tighter = cfg.merged(ranking={"min_score": 0.3, "mmr": {"lambda": 0.5}})
            assert tighter.ranking.mmr.enabled is False and tighter.ranking.mmr.lambda_ == 0.5
    """

    max_results: int = Field(6, ge=1)
    """Hits a search returns (``search(..., max_results=)`` and the tool's ``max_results`` override it)."""
    ranking: RankingConfig = RankingConfig()
    """How a search ranks (the pipeline's steps)."""
    chunking: ChunkingConfig = ChunkingConfig()
    """How files are cut into chunks."""
    embedding: EmbeddingConfig = EmbeddingConfig()
    """How the embedding model is called."""
    index: IndexConfig = IndexConfig()
    """How the index holds vectors and notices outside edits."""
    limits: LimitsConfig = LimitsConfig()
    """Bounds on writes, files, paths and queries."""
    hygiene: HygieneConfig = HygieneConfig()
    """Redaction, dedup and provenance of what the package writes."""
    session: SessionConfig = SessionConfig()
    """The session context and first-turn recall."""

    @model_validator(mode="before")
    @classmethod
    def _move_flat_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(key in MOVED for key in data):
            data = _grouped(data)
        if isinstance(data, dict):
            _check_names(cls, data)
        return data

    def __getattr__(self, name: str) -> Any:
        moved = MOVED.get(name)
        if moved is None:
            return super().__getattr__(name)  # type: ignore[misc]
        _warn(f"MemoryConfig.{name}", f"MemoryConfig.{'.'.join(moved)}")
        group, leaf = moved
        return getattr(getattr(self, group), leaf)

    def merged(self, **overrides: Any) -> MemoryConfig:
        """Return a copy with ``overrides`` deep-merged (nested dicts key by key)."""
        if any(key in MOVED for key in overrides):
            overrides = _grouped(overrides)
        base = self.model_dump(by_alias=True)
        return MemoryConfig.model_validate(_deep_merge(base, overrides))


MOVED: dict[str, tuple[str, str]] = {
    **{name: ("ranking", name) for name in RankingConfig.model_fields},
    **{name: ("chunking", name) for name in ChunkingConfig.model_fields},
    "embedding_batch_size": ("embedding", "batch_size"),
    "embedding_timeout_s": ("embedding", "timeout_s"),
    "embedding_retries": ("embedding", "retries"),
    **{name: ("index", name) for name in IndexConfig.model_fields},
    **{name: ("limits", name) for name in LimitsConfig.model_fields},
    **{name: ("hygiene", name) for name in HygieneConfig.model_fields},
    "max_session_context_tokens": ("session", "context_tokens"),
    "recall_confident_only": ("session", "recall_confident_only"),
}
"""Each flat keyword of earlier releases and its ``(group, setting)`` now; they work until 0.4, with a
``DeprecationWarning``."""


def _warn(old: str, new: str) -> None:
    """A deprecation warning pointing at the first caller outside this module and pydantic."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and (frame.f_code.co_filename == __file__
                                        or f"{os.sep}pydantic" in frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    warnings.warn(f"{old} is deprecated: use {new} (the flat form works until 0.4)", DeprecationWarning,
                  stacklevel=level)


def _grouped(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each flat keyword moved into its group (a deprecation warning each)."""
    out: dict[str, Any] = {key: value for key, value in data.items() if key not in MOVED}
    for key, value in data.items():
        if key in MOVED:
            group, leaf = MOVED[key]
            _warn(f"MemoryConfig({key}=...)", f"MemoryConfig({group}={{{leaf!r}: ...}})")
            into = out.setdefault(group, {})
            if isinstance(into, BaseModel):
                into = out[group] = into.model_dump(by_alias=True)
            into[leaf] = value
    return out


def _check_names(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> None:
    """Refuse a key no setting has, naming the closest setting by its full path (any group's).

    Raises:
        MemoryInputError: for the first unknown key, e.g. ``ranking.min_scor``.
    """
    for key, value in data.items():
        field = model.model_fields.get(key) or next(
            (f for f in model.model_fields.values() if f.alias == key), None)
        if field is None:
            path = f"{prefix}{key}"
            closest = _closest_setting(str(key), prefix)
            top = MemoryConfig.model_fields.items()
            hint = (f"did you mean {closest}?" if closest is not None else
                    f"the settings are {', '.join(n for n, f in top if _group(f) is None)} and the groups "
                    f"{', '.join(n for n, f in top if _group(f) is not None)}")
            raise MemoryInputError(f"unknown setting {path!r}: {hint} (every setting with its default: "
                                   "docs/settings.md)")
        inner = _group(field)
        if isinstance(value, Mapping) and inner is not None:
            _check_names(inner, value, f"{prefix}{field.alias or key}.")


def _group(field: FieldInfo) -> type[BaseModel] | None:
    """The settings model of a field that is a group of settings; ``None`` for a single setting."""
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _closest_setting(key: str, prefix: str) -> str | None:
    """The setting whose name is closest to ``key`` (its flat name of earlier releases counts too),
    as a full dotted path; ``None`` when none is close.

    Spelling decides, and a name's first word is its subject (``chunk_tokens``, ``batch_size``): a key
    sharing it counts as closer (``chunk_size`` is ``chunking.chunk_tokens``, not
    ``embedding.batch_size``); one in the group ``prefix`` names wins a tie.
    """
    names = [(path.rsplit(".", 1)[-1], path) for path, _, _ in _settings(MemoryConfig, "")]
    names += [(flat, ".".join(to).replace("lambda_", "lambda")) for flat, to in MOVED.items()]
    key = key.casefold()
    best: tuple[float, str] | None = None
    for name, path in names:
        name = name.casefold()
        score = difflib.SequenceMatcher(None, key, name).ratio()
        score += 0.2 if key.split("_")[0] == name.split("_")[0] else 0.0
        score += 0.01 if prefix and path.startswith(prefix) else 0.0
        if score >= 0.6 and (best is None or score > best[0]):
            best = (score, path)
    return None if best is None else best[1]


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


def _settings(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, str, str]]:
    """``(dotted name, default, docstring)`` of every setting below ``model``, in declaration order."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        group = _group(field)
        if group is not None:
            yield from _settings(group, f"{prefix}{key}.")
            continue
        default = field.get_default(call_default_factory=True)
        text = repr(default) if not isinstance(default, str) else f'"{default}"'
        yield f"{prefix}{key}", text, " ".join((field.description or "").split())


def settings_table() -> str:
    """Every setting of :class:`MemoryConfig` as a Markdown table, from the fields' docstrings
    (``docs/settings.md`` holds it; a test fails when they differ)."""
    rows = ["| setting | default | what it does |", "| --- | --- | --- |"]
    for name, default, text in _settings(MemoryConfig, ""):
        cell = text.replace("|", "\\|")
        rows.append(f"| `{name}` | `{default}` | {cell} |")
    return "\n".join(rows) + "\n"
