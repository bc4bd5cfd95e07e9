"""The text estimator (`estimate_tokens`) against o200k_base: within ten per cent on held-out
text of every kind and never five below, not tuned to its training half, far better than
chars/4; its fast path computes the weighted sum of the features; any text gets an estimate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbagent import estimate_tokens
from nbagent.engine._estimator import _WEIGHTS, _features

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import corpora  # noqa: E402


@pytest.fixture(scope="module")
def o200k() -> Any:
    return corpora.o200k()


@pytest.fixture(scope="module")
def errors(o200k: Any) -> dict[str, tuple[float, float, float]]:
    """Relative error of the estimate against o200k_base on each corpus's held-out half,
    beside chars/4's, and the estimate's error on the training half."""

    def error(texts: list[str], count: Any) -> float:
        real = sum(len(o200k.encode_ordinary(t)) for t in texts)
        return sum(count(t) for t in texts) / real - 1

    result = {}
    for name, make in corpora.CORPORA.items():
        corpus = make()
        result[name] = (
            error(corpus.held_out, estimate_tokens),
            error(corpus.held_out, lambda t: len(t) / 4),
            error(corpus.train, estimate_tokens),
        )
    return result


@pytest.mark.parametrize("name", list(corpora.CORPORA), ids=str)
def test_on_held_out_text_the_estimate_is_within_ten_percent_and_never_five_below(
    name: str, errors: dict[str, tuple[float, float, float]]
) -> None:
    held_out = errors[name][0]
    assert -0.05 <= held_out <= 0.10


def test_the_held_out_error_is_close_to_the_training_error(
    errors: dict[str, tuple[float, float, float]],
) -> None:
    """The weights are not tuned to the text they were fitted on."""
    gaps = {name: abs(held - trained) for name, (held, _, trained) in errors.items()}
    assert max(gaps.values()) < 0.15
    assert sorted(gaps.values())[len(gaps) // 2] < 0.03


def test_the_estimators_worst_kind_is_far_better_than_chars_over_four(
    errors: dict[str, tuple[float, float, float]],
) -> None:
    worst_ours = max(abs(ours) for ours, _, _ in errors.values())
    worst_naive = max(abs(naive) for _, naive, _ in errors.values())
    assert worst_ours < worst_naive / 5


@given(st.text())
def test_the_fast_path_computes_the_weighted_sum_of_the_features(text: str) -> None:
    total = sum(_WEIGHTS.get(name, 0.0) * n for name, n in _features(text).items())
    assert estimate_tokens(text) == (max(1, round(total)) if text else 0)


@pytest.mark.parametrize(
    "text",
    ["a\udc80b", "\x00\x1b[0m", "\u200d" * 5, "\U0010ffff", "é" * 1000, " " * 5000, "9" * 400],
    ids=["lone-surrogate", "controls", "zwj", "last-codepoint", "accents", "spaces", "digits"],
)
def test_any_text_gets_an_estimate(text: str) -> None:
    assert estimate_tokens(text) >= 1


def test_empty_text_costs_nothing_and_any_text_costs_something() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1 and estimate_tokens("a") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("123456789", 3),  # o200k splits digit runs into threes
        ("hello world", 2),
        ("What is the mean of the revenue column?", 9),
        ("x   12.5", 6),  # "x", "  ", " ", "12", ".", "5"
        ("  (a)", 4),  # " ", " (", "a", ")"
    ],
)
def test_pieces_are_counted_the_way_o200k_splits_them(text: str, expected: int, o200k: Any) -> None:
    assert estimate_tokens(text) == expected == len(o200k.encode_ordinary(text))
