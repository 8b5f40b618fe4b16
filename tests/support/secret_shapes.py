"""Fake secrets in every shape the write redaction covers, and ordinary lines it must leave alone.

Each shape is ``(name, text, value)``: ``text`` is how a person or a model writes it into a note,
``value`` the part that must never reach the Markdown, the index or a hit. Every value is made up.
"""

from __future__ import annotations

_B64 = "QmFzZTY0RmFrZUtleU1hdGVyaWFsRm9yVGVzdHNPbmx5"

SECRET_SHAPES: list[tuple[str, str, str]] = [
    # The three shapes caught before issue 39.
    ("openai key", "- deploy key sk-proj-Fake0123456789abcdefGHIJ", "sk-proj-Fake0123456789abcdefGHIJ"),
    ("github classic token", "- ci uses ghp_FakeFake0123456789abcdefghijKLMNOP",
     "ghp_FakeFake0123456789abcdefghijKLMNOP"),
    ("url password", "- db at postgres://app:Hunter22x@db.internal/app", "Hunter22x"),
    # The shapes issue 39 lists.
    ("jwt", "- session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlLXVzZXIifQ.ZmFrZXNpZ25hdHVyZTEyMzQ1",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlLXVzZXIifQ.ZmFrZXNpZ25hdHVyZTEyMzQ1"),
    ("aws secret ini", "aws_secret_access_key = FakeSecretKeyForTests0123456789abcdEFGH",
     "FakeSecretKeyForTests0123456789abcdEFGH"),
    ("aws secret export", 'export AWS_SECRET_ACCESS_KEY="Fake/SecretKey+ForTests0123456789abcd"',
     "Fake/SecretKey+ForTests0123456789abcd"),
    ("json db_password", '{"host": "db", "db_password": "Fake-Pass-2026!"}', "Fake-Pass-2026!"),
    ("json client_secret", '{"client_id": "app", "client_secret": "FakeClientSecretValue42"}',
     "FakeClientSecretValue42"),
    ("url password with slash", "- backup to https://backup:Fake/Pass9@files.example.com/x", "Fake/Pass9"),
    ("github fine-grained pat", "- token github_pat_11FAKE0000000000000000_FakeFakeFakeFakeFake0123",
     "github_pat_11FAKE0000000000000000_FakeFakeFakeFakeFake0123"),
    ("gitlab pat", "- gitlab glpat-FakeFake0123456789abcd", "glpat-FakeFake0123456789abcd"),
    ("stripe live key", "- billing sk_live_FakeFake0123456789abcdefgh", "sk_live_FakeFake0123456789abcdefgh"),
    ("google api key", "- maps AIzaSyFake0123456789abcdefghijklmnopqrs",
     "AIzaSyFake0123456789abcdefghijklmnopqrs"),
    ("slack webhook", "- alerts https://hooks.slack.com/services/TFAKE0000/BFAKE0000/FakeFakeFakeFake0123",
     "https://hooks.slack.com/services/TFAKE0000/BFAKE0000/FakeFakeFakeFake0123"),
    ("hugging face token", "- hub hf_FakeFakeFakeFakeFakeFakeFakeFakeFa",
     "hf_FakeFakeFakeFakeFakeFakeFakeFakeFa"),
    ("npm token", "- publish npm_FakeFakeFakeFakeFakeFakeFakeFake012345",
     "npm_FakeFakeFakeFakeFakeFakeFakeFake012345"),
    ("azure storage connection string",
     f"DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey={_B64}==;EndpointSuffix=core.windows.net",
     f"{_B64}=="),
    ("openssh key without end", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_B64}\n{_B64[::-1]}", _B64),
    ("key inside a hand-written mark", "- old key [redacted: sk-FakeFakeFake0123456789abcd]",
     "sk-FakeFakeFake0123456789abcd"),
]
"""``(name, text, value)`` per shape; the first three were caught before issue 39 (3 of 19)."""

ORDINARY_LINES: list[str] = [
    "- Fixed in commit 3f9c2a1e8b7d6c5f4a3b2c1d0e9f8a7b6c5d4e3f on main",
    "- short hash 3f9c2a1 was the release",
    "- request id 123e4567-e89b-42d3-a456-426614174000 failed at 10:42",
    "- sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the installer",
    "- The password policy asks for 12 characters and a symbol",
    "- Password: rotate it every 90 days",
    "- Reset tokens expire after one hour; refresh tokens after 30 days",
    "- max_tokens = 400 for the summariser",
    "- The secret to good sourdough is a long cold proof",
    "- Secretary: Mrs. Lee, room 4B",
    "- API keys live in the vault, never in notes",
    "- Docs at https://docs.example.com/guide/install#step-2",
    "- Repo https://github.com/example/project/pull/42",
    "- Mirror at https://user@git.example.com/repo.git",
    "- Server listens on http://localhost:8080/api/v1",
    "- Flight LH 456 on 2026-12-03 at 07:15, seat 23A",
    "- Bond ladder: 5 rungs of 20,000 EUR, 2027-2031",
    "- Base64 is how the mail attachment was encoded",
    "- Bearer of the news: Dana",
    "- token count was 12 for that prompt",
    "- ISBN 978-3-16-148410-0 is the book",
    "- Phone plan renews on the 14th",
    "- Use `git log --oneline -n 5` to see the last commits",
]
"""Notes with hashes, ids, checksums, URLs without a password and prose about secrets: kept byte for byte."""
