"""The secret shapes, one table (`nbagent.agent.archive._shapes.SHAPES`): every row has
examples in `tests/data/secrets.json`, each found by its row with only its secret span
removed; words that merely contain a key prefix stay whole; a private-key header redacts
its body only when one follows, and a body cut short still goes."""

from __future__ import annotations

import pytest

from nbagent.agent.archive import REDACTED, SHAPES, redact
from tests.agent.archive.secrets_corpus import NO_ENV, SECRETS, secret_id


@pytest.mark.parametrize("entry", SECRETS, ids=secret_id)
def test_each_format_is_found_by_its_row_and_only_its_span_is_removed(entry: dict[str, str]) -> None:
    text, secret = entry["text"], entry["secret"]
    shape = next(s for s in SHAPES if s.name == entry["format"])
    start = text.index(secret)
    found = [shape.span(match) for match in shape.pattern.finditer(text)]
    assert (start, start + len(secret)) in found
    assert redact(text, NO_ENV) == text.replace(secret, REDACTED)


def test_every_row_of_the_table_has_corpus_entries() -> None:
    assert {s.name for s in SHAPES} == {entry["format"] for entry in SECRETS}


@pytest.mark.parametrize("word", ["risk-adjusted", "new-york-city-taxi.csv", "task-scheduler",
                                  "desk-research", "network-latency_ms", "benchmark-results",
                                  "pk-customer_id", "sk-learn", "ask-me-anything-2024",
                                  "disk-usage-report-20240101-final.csv"])
def test_words_that_contain_a_key_prefix_stay_whole(word: str) -> None:
    assert redact(f"see {word} and {word}", NO_ENV) == f"see {word} and {word}"


@pytest.mark.parametrize("text", [
    "-----BEGIN RSA PRIVATE KEY----- goes first in the file, then the body, then the END line.",
    "The file starts with -----BEGIN OPENSSH PRIVATE KEY-----\nand that is all we know.",
    "-----BEGIN PRIVATE KEY-----\n(elided)\n-----END PRIVATE KEY-----",
], ids=["header in prose", "header then prose", "elided body"])
def test_a_key_header_without_its_body_redacts_nothing(text: str) -> None:
    assert redact(text, NO_ENV) == text


def test_a_key_body_cut_short_is_still_redacted_and_the_text_after_kept() -> None:
    body = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 1] * 3)
    text = f"-----BEGIN PRIVATE KEY-----\n{body}\n\nThat was the key (cut by the pager)."
    assert redact(text, NO_ENV) == ("-----BEGIN PRIVATE KEY-----[redacted]\n"
                                    "That was the key (cut by the pager).")


def _variants(text: str) -> list[str]:
    return [text, text.upper(), text.lower(), text.swapcase(), f"«{text}» 月",
            text.replace("=", " = "), text.replace(":", ": "), text + " \u212aey: \u017fecret"]


@pytest.mark.parametrize("entry", SECRETS, ids=secret_id)
def test_a_rows_needs_are_in_every_text_its_pattern_matches(entry: dict[str, str]) -> None:
    """`needs` and `needs_folded` only pass over texts the row cannot match: every match,
    in every case the text is written in, holds one of them (a non-ASCII text, whose case
    is not only ASCII's — the Kelvin sign is a k to a case-blind pattern — is searched
    whatever it holds)."""
    for text in _variants(entry["text"]):
        for shape in SHAPES:
            for match in shape.pattern.finditer(text):
                if shape.needs:
                    assert any(part in match.group() for part in shape.needs), shape.name
                if shape.needs_folded:
                    assert any(word in match.group().lower() for word in shape.needs_folded)
