from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_md_memory.text.redaction import WriteRedactor, card_number_like, luhn_valid


@pytest.mark.parametrize(("text", "expected"), [
    ("key sk-abcdefghijklmnopqrstu", "key [redacted: api key]"),
    ("Authorization: Bearer abc.def.ghi.jkl", "Authorization: Bearer [redacted: token]"),
    ("aws AKIAABCDEFGHIJKLMNOP", "aws [redacted: aws key]"),
    ("password: hunter22", "password: [redacted: password]"),
    ("https://bob:pw@host/x", "https://bob:[redacted: password]@host/x"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted: private key]"),
    ("card 4111-1111-1111-1111", "card [redacted: card number]"),
])
def test_secrets_become_labelled_marks(text, expected):
    assert WriteRedactor(("card",)).redact(text) == expected


def test_digits_that_fail_luhn_are_not_a_card():
    assert WriteRedactor(("card",)).redact("order 1234 5678 9012 3456") == "order 1234 5678 9012 3456"
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")


def test_email_and_phone_only_when_asked():
    text = "mail bob@example.com or call +1 415 555 0199 on 2026-12-03"
    assert WriteRedactor().redact(text) == text
    assert WriteRedactor(("email", "phone")).redact(text) == (
        "mail [redacted: e-mail] or call [redacted: phone] on 2026-12-03")


def test_own_patterns_with_a_secret_group_keep_their_label():
    r = WriteRedactor(patterns={"employee id": r"emp#(?P<secret>\d{6})"})
    assert r.redact("badge emp#123456") == "badge emp#[redacted: employee id]"


def test_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="iban"):
        WriteRedactor(("iban",))


@given(st.text(alphabet=st.sampled_from(list("sk-abcdef0123456789 :=@/password4111\n")), max_size=80))
def test_redacting_twice_changes_nothing(text):
    r = WriteRedactor(("email", "phone", "card"))
    once = r.redact(text)
    assert r.redact(once) == once


def test_a_card_number_needs_a_card_networks_prefix_and_length():
    # All four pass the Luhn check; only the first two are numbers a card network issues.
    assert card_number_like("4111 1111 1111 1111") and card_number_like("3782 822463 10005")  # Visa, Amex
    assert not card_number_like("9920 1188 4471 035")  # a frequent-flyer number
    assert not card_number_like("3782 8224 6310 0052")  # an Amex prefix, but Amex numbers have 15 digits
    assert all(luhn_valid(n) for n in ("9920 1188 4471 035", "3782 8224 6310 0052"))
    r = WriteRedactor(kinds=("card",))
    note = "Lufthansa Miles & More: 9920 1188 4471 035"
    assert r.redact(note) == note


# -- issue 39: the shapes secret scanners look for, and the notes they must leave alone ----------

from tests.support.secret_shapes import ORDINARY_LINES, SECRET_SHAPES  # noqa: E402


@pytest.mark.parametrize(("name", "text", "value"), SECRET_SHAPES, ids=[s[0] for s in SECRET_SHAPES])
def test_every_known_secret_shape_is_redacted(name, text, value):
    out = WriteRedactor(("card",)).redact(text)
    assert value not in out
    assert "[redacted: " in out


def test_ordinary_lines_survive_byte_for_byte():
    r = WriteRedactor(("card",))
    assert len(ORDINARY_LINES) >= 20
    assert [r.redact(line) for line in ORDINARY_LINES] == ORDINARY_LINES


def test_a_key_inside_a_hand_written_mark_is_still_redacted():
    out = WriteRedactor().redact("old [redacted: sk-FakeFakeFake0123456789abcd] gone")
    assert "sk-Fake" not in out and out == "old [redacted: [redacted: api key]] gone"


def test_a_private_key_without_its_end_line_is_redacted_to_its_last_key_line():
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAAfake0123==\n\n- next note"
    assert WriteRedactor().redact(text) == "[redacted: private key]\n\n- next note"


def test_prose_after_password_is_not_a_password():
    r = WriteRedactor()
    assert r.redact("password: rotate it yearly") == "password: rotate it yearly"
    assert r.redact("password: hunter22") == "password: [redacted: password]"


def test_a_url_with_a_port_and_a_path_keeps_them():
    note = "- see http://host:8080/a/b@c for the page"
    assert WriteRedactor().redact(note) == note
