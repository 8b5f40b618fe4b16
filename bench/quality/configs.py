"""Named search configurations: dicts of :class:`MemoryConfig` overrides, checked before a run.

A config is what a user would pass as ``MarkdownMemory(..., config=overrides)``;
nested dicts override only the keys they name (``{"ranking": {"mmr": {"enabled": False}}}``).
One key is the harness's own: ``"embeddings": "none"`` opens the same folder
without an embedding model, so the keyword path answers alone over the very
index the hybrid configs use.

Example:
    .. code-block:: python

        specs = resolve_configs(["default", "no-mmr"], ["tight={\\"ranking\\": {\\"min_score\\": 0.3}}"])
        assert [s.name for s in specs] == ["default", "no-mmr", "tight"]
        assert specs[2].config is not None and specs[2].config.ranking.min_score == 0.3
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from langchain_md_memory import MemoryConfig
from langchain_md_memory.config import SEED_RANKING
from langchain_md_memory.errors import MemoryStoreError

__all__ = ["DEFAULT_CONFIGS", "ConfigSpec", "parse_config_arg", "resolve_configs"]

DEFAULT_CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},  # exactly what a user gets without a config
    "keyword-only": {"embeddings": "none"},
    "vector-only": {"ranking": {"text_weight": 0.0}},
    "no-mmr": {"ranking": {"mmr": {"enabled": False}}},
    "no-decay": {"ranking": {"temporal_decay": {"enabled": False}}},
    # One step at a time back to the specification's choice (SEED_RANKING has them all).
    "seed": dict(SEED_RANKING),
    "fusion=weighted_raw": {"ranking": {"fusion": "weighted_raw", "min_score": 0.1}},
    "fusion=minmax": {"ranking": {"fusion": "minmax"}},
    "fusion=rrf": {"ranking": {"fusion": "rrf", "rrf_k": 5}},
    "decay floor 0": {"ranking": {"temporal_decay": {"floor": 0.0}}},
    "mmr threshold 0": {"ranking": {"mmr": {"duplicate_threshold": 0.0}}},
}
"""The configurations run when ``--configs`` is not given, in report order."""

HARNESS_KEYS = ("embeddings",)


@dataclass(frozen=True, slots=True)
class ConfigSpec:
    """One named config: its overrides, the validated config, or why it was skipped."""

    name: str
    overrides: Mapping[str, Any]
    config: MemoryConfig | None
    keyword_only: bool = False
    skipped: str | None = None


def build_spec(name: str, overrides: Mapping[str, Any]) -> ConfigSpec:
    """Validate ``overrides``; a config the installed :class:`MemoryConfig` rejects is skipped, not fatal."""
    fields = {k: v for k, v in overrides.items() if k not in HARNESS_KEYS}
    embeddings = overrides.get("embeddings")
    if embeddings not in (None, "none"):
        reason = f"unsupported embeddings {embeddings!r} (only 'none')"
        return ConfigSpec(name, overrides, None, skipped=reason)
    try:
        config = MemoryConfig.model_validate(fields)
    except (ValidationError, MemoryStoreError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        return ConfigSpec(name, overrides, None, skipped=reason[:300])
    return ConfigSpec(name, overrides, config, keyword_only=embeddings == "none")


def parse_config_arg(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=JSON`` (a JSON object of overrides) → ``(name, overrides)``."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"--config wants NAME=JSON, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--config {name}: not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"--config {name}: wants a JSON object, got {type(value).__name__}")
    return name, value


def resolve_configs(names: Sequence[str] | None, extra: Sequence[str] = ()) -> list[ConfigSpec]:
    """The built-in configs named in ``names`` (all when ``None``), then each ``NAME=JSON`` of ``extra``.

    An extra config may reuse a built-in name to replace it. Unknown built-in
    names raise :class:`ValueError` (a typo should not silently shrink a run).
    """
    chosen: dict[str, Mapping[str, Any]] = {}
    added = dict(parse_config_arg(text) for text in extra)
    for name in names if names is not None else list(DEFAULT_CONFIGS):
        if name in added:
            continue
        if name not in DEFAULT_CONFIGS:
            known = ", ".join(DEFAULT_CONFIGS)
            raise ValueError(f"unknown config {name!r}; built-in: {known} (or add one: --config NAME=JSON)")
        chosen[name] = DEFAULT_CONFIGS[name]
    chosen.update(added)
    return [build_spec(name, overrides) for name, overrides in chosen.items()]
