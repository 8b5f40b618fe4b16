"""As-of search on a PostgreSQL tenant: the History it keeps, read from the tenant's index."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_md_memory import MarkdownMemory
from tests.integration import test_as_of_search
from tests.integration.test_as_of_search import *  # noqa: F403
from tests.integration.test_as_of_search import CHANGED, OLD, VOCAB
from tests.postgres.conftest import MemoryFactory
from tests.support.embeddings import AxisEmbeddings

# About a folder (its CLI, its index file, a fresh folder of their own): run once already.
FOLDER_ONLY = {
    "test_cli_as_of_prints_the_day_and_refuses_a_bad_date",
    "test_an_index_from_before_struck_lines_were_kept_gains_them_on_open",
    "test_relative_dates_read_from_today",
    "test_struck_lines_are_embedded_when_indexed_never_during_a_search",
}
for _name in dir(test_as_of_search):
    if _name in FOLDER_ONLY and _name in globals():
        del globals()[_name]


@pytest.fixture
def mem(pg_memory: MarkdownMemory) -> MarkdownMemory:
    pg_memory.append(f"- {OLD} <!-- src: via=test 2024-06-01 -->\n- Knee physio on Mondays\n- Tea: sencha")
    assert pg_memory.supersede(OLD, OLD.replace("1,650", "1,720"), today=CHANGED)
    return pg_memory


def test_a_tenants_struck_lines_are_embedded_when_indexed(pg_memory_factory: MemoryFactory) -> None:
    model = AxisEmbeddings(VOCAB)
    memory = pg_memory_factory(embeddings=model)
    history = "\n".join(f"- ~~Rent {n} for the flat~~ (superseded 2025-03-01) <!-- src: via=t 2024-01-01 -->"
                        for n in range(40))
    memory.write("MEMORY.md", f"- Rent 1,720 for the flat\n\n## History\n{history}\n")
    stats = memory.sync()
    assert stats.embedded == stats.chunks_added + 40
    calls = model.calls
    hits = memory.search("rent for the flat", as_of=dt.date(2024, 9, 15))
    assert model.calls == calls
    assert hits[0].valid_until == "2025-03-01"
