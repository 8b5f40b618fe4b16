"""Per-project memory: project identity, the memory home, and global + project scoping.

A project is named by its normalised git remote (``git@github.com:org/repo.git``
and ``https://github.com/org/repo`` are both ``org/repo``), else by its
absolute path; a short hash of the full remote (host included) or path keeps
two different projects with the same name apart. The layout under the memory
home is::

    <home>/MEMORY.md                  global memory (root-level files only)
    <home>/<project-id>/MEMORY.md     project memory, dailies, sessions/

Hits from the global memory carry ``scope="global"`` and paths prefixed with
:data:`GLOBAL_PREFIX` (``~global/MEMORY.md``), which the project memory routes
to the global one (:class:`~langchain_md_memory.ProjectMemory`); a real project file
can never have that prefix (``~`` is refused by the path guard and never indexed).

Example:
    .. code-block:: python

        from langchain_md_memory.files.projects import normalize_remote, project_id

        assert normalize_remote("git@github.com:Org/Repo.git") == "org/repo"
        pid = project_id(".")  # e.g. "org-repo-1a2b3c4d"
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from ..text import estimate_tokens

__all__ = [
    "DEFAULT_HOME",
    "GLOBAL_PREFIX",
    "HOME_ENV",
    "ProjectIdentity",
    "layered_context",
    "memory_home",
    "normalize_remote",
    "project_id",
    "project_identity",
    "project_memory_dir",
]

logger = logging.getLogger(__name__)

HOME_ENV = "LANGCHAIN_MD_MEMORY_HOME"
"""Environment variable naming the memory home (root of global + project memories)."""

DEFAULT_HOME = "~/.langchain_md_memory"
"""The memory home when neither an argument nor :data:`HOME_ENV` names one."""

GLOBAL_PREFIX = "~global/"
"""Path prefix of global-memory hits seen through a project memory."""

_GIT_TIMEOUT_S = 5.0
_HASH_CHARS = 8
_MAX_SLUG = 60
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!/).*)$")


@dataclass(frozen=True, slots=True)
class ProjectIdentity:
    """Who a project is: ``id`` (a safe folder name), readable ``name``, and where it came from.

    ``source`` is ``"remote"`` (``name`` is ``org/repo``, ``remote`` the raw
    URL without credentials) or ``"path"`` (``name`` is the folder name).
    """

    id: str
    name: str
    source: Literal["remote", "path"]
    remote: str | None = None


def _strip_repo_path(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]
    if parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
    return "/".join(p for p in parts if p).lower()


def _split_remote(url: str) -> tuple[str, str] | None:
    """``(host, org/repo)`` of a git remote URL, or ``None`` when it names no repository."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = _strip_repo_path(parts.path)
    else:
        match = _SCP_LIKE.match(url)
        if match is not None and not re.match(r"^[A-Za-z]:[\\/]", url):
            host, path = match["host"].lower(), _strip_repo_path(match["path"])
        else:  # a local path used as a remote
            host, path = "", _strip_repo_path(url)
    if not path:
        return None
    return host, path


def normalize_remote(url: str) -> str | None:
    """``org/repo`` for a git remote URL (ssh, scp-like, https, with or without ``.git``).

    Credentials, ports and the host are dropped and the result is lower-case;
    GitLab-style subgroups stay (``group/sub/repo``). A local-path remote
    keeps its last two components. ``None`` when the URL names no repository.

    Example:
        .. code-block:: python

            for url in ("git@github.com:org/repo.git", "https://github.com/org/repo/",
                        "ssh://git@github.com:22/org/repo.git"):
                assert normalize_remote(url) == "org/repo"
    """
    split = _split_remote(url)
    if split is None:
        return None
    host, path = split
    if not host:
        path = "/".join(path.split("/")[-2:])
    return path


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def _slug(name: str) -> str:
    slug = _UNSAFE.sub("-", name.lower().replace("/", "-"))
    slug = re.sub(r"-{2,}", "-", re.sub(r"\.{2,}", ".", slug)).strip(".-_")
    return slug[:_MAX_SLUG].rstrip(".-_") or "project"


def _git(path: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.SubprocessError) as exc:  # git missing or hung
        logger.debug("git %s in %s failed: %s", " ".join(args), path, exc)
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def _without_credentials(url: str) -> str:
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def project_identity(path: str | os.PathLike[str] = ".") -> ProjectIdentity:
    """The identity of the project at ``path`` (any folder inside it).

    Reads ``remote.origin.url`` with ``git``; without git, a repository or an
    origin remote, the repository top level (else the folder) names it.

    Example:
        .. code-block:: python

            ident = project_identity(".")
            print(ident.id, ident.name, ident.source)  # org-repo-1a2b3c4d org/repo remote
    """
    folder = Path(path).expanduser().resolve()
    top = _git(folder, "rev-parse", "--show-toplevel")
    base = Path(top).resolve() if top else folder
    url = _git(base, "config", "--get", "remote.origin.url") if top else None
    split = _split_remote(url) if url else None
    if url and split is not None:
        host, repo = split
        name = repo if host else "/".join(repo.split("/")[-2:])
        # The host is in the hash, so github.com/org/repo and gitlab.com/org/repo stay apart.
        return ProjectIdentity(f"{_slug(name)}-{_short_hash(f'{host}/{repo}')}", name, "remote",
                               _without_credentials(url))
    name = base.name or "root"
    return ProjectIdentity(f"{_slug(name)}-{_short_hash(str(base))}", name, "path")


def project_id(path: str | os.PathLike[str] = ".") -> str:
    """The project's memory folder name, e.g. ``org-repo-1a2b3c4d``; see :func:`project_identity`."""
    return project_identity(path).id


def memory_home(root: str | os.PathLike[str] | None = None) -> Path:
    """The memory home: ``root``, else ``$LANGCHAIN_MD_MEMORY_HOME``, else ``~/.langchain_md_memory``."""
    chosen = root if root is not None else (os.environ.get(HOME_ENV) or DEFAULT_HOME)
    return Path(chosen).expanduser().resolve()


def project_memory_dir(path: str | os.PathLike[str] = ".", root: str | os.PathLike[str] | None = None,
                       ) -> tuple[Path, ProjectIdentity]:
    """``(<home>/<project-id>, identity)`` for the project at ``path``."""
    identity = project_identity(path)
    return memory_home(root) / identity.id, identity


# -- a project memory's session context --------------------------------------------


def layered_context(layers: Sequence[tuple[str, Callable[[int], str]]], max_tokens: int) -> str:
    """Each layer's context under a ``# <title>`` heading, in order, all within one budget.

    ``layers`` pairs a title with a loader taking the tokens still free (e.g.
    a store's ``load_session_context``); an earlier layer is served first. A
    layer is never left out while it has content: with no room left it shows
    what its loader gives for one token (its cut notes). ``max_tokens <= 0``
    (the context turned off) or no content gives ``""``.
    """
    if max_tokens <= 0:
        return ""
    parts: list[str] = []
    for title, load in layers:
        heading = f"# {title}"
        free = max(max_tokens - estimate_tokens("\n\n".join([*parts, heading, ""])), 1)
        text = ""
        for _ in range(3):  # token estimates of joined text are not exactly additive
            text = load(free)
            if not text:
                break
            over = estimate_tokens("\n\n".join([*parts, f"{heading}\n\n{text}"])) - max_tokens
            if over <= 0 or free == 1:
                break
            free = max(free - over, 1)
        if text:
            parts.append(f"{heading}\n\n{text}")
    return "\n\n".join(parts)
