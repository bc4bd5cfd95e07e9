"""How close and how fast nbagent's token estimator is, against tiktoken's o200k_base.

python bench/estimator_accuracy.py        # prints a table, updates docs/performance.md
python bench/estimator_accuracy.py --fit  # refits the weights on the training halves

Accuracy is reported on the held-out half of every corpus (bench/corpora.py); the
weights are fitted on the other half only. Speed is a ratio measured in one run:
tiktoken's time over ours on the same text, so above 1 means faster than tiktoken.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import corpora
from report import write_section

from nbagent.engine import _estimator
from nbagent.engine._estimator import estimate_tokens

# Weights that follow o200k's pre-tokenizer (one token per piece) stay fixed; the rest
# are fitted. Non-ASCII weights are pulled towards what byte-level BPE spends on such a
# character (emoji up to four bytes, so up to four tokens; most cost one or two); CJK and
# Hangul towards what o200k spends on running prose (0.7 a character: common words are
# single tokens of two or three characters; rare names cost more, see `cjk_names`).
PRIORS = {
    "latin2": 0.5,
    "latin2_after_char": 0.5,
    "symbol": 1.25,
    "cjk": 0.75,
    "hangul": 0.75,
    "astral": 2.25,
}
STRUCTURAL = {
    "word",
    "camel",
    "digit",
    "digit_after_space",
    "punct",
    "newline",
    "newline_after_space",
    "spaces_then_word",
    "spaces_then_punct",
    "spaces_then_digit",
    "spaces_then_other",
    "digit_run",
}
CORRECTIONS = {"fullwidth"}  # weights added on top of another's: may be below zero
UNDER_PENALTY = 6.0  # an underestimate costs this many times an overestimate of the same size
AIM = 1.02  # fit to 2% above the real count: erring high is the safe side


def fit(samples: Sequence[tuple[str, str, int]],
        only: Sequence[str] | None = None) -> dict[str, float]:
    """Weights that minimise the squared relative error per sample (kinds weighted
    equally, underestimates penalised), rounded to sixteenths. `only`: refit these
    weights and keep the others as they are (so a change for one kind of text leaves the
    others' figures as they were)."""
    import numpy as np

    names = sorted(_estimator._WEIGHTS)
    free = [n for n in names if n not in STRUCTURAL and (only is None or n in only)]
    held = [n for n in names if n not in free]
    rows = [_estimator._features(text) for _, text, _ in samples]
    real = np.array([n for _, _, n in samples], float)
    fixed = np.array([sum(_estimator._WEIGHTS[n] * r.get(n, 0) for n in held) for r in rows])
    features = np.array([[r.get(n, 0) for n in free] for r in rows], float)
    kinds = [kind for kind, _, _ in samples]
    per_kind = np.array([1.0 / kinds.count(kind) for kind in kinds])
    prior = np.array([PRIORS.get(n, 0.0) for n in free])
    ridge = np.array([0.2 if n in PRIORS else 1e-5 for n in free])
    penalty = np.ones(len(samples))
    for _ in range(20):
        scale = np.sqrt(per_kind * penalty)[:, None]
        a = np.vstack([features / real[:, None] * scale, np.diag(np.sqrt(ridge))])
        b = np.concatenate([(AIM - fixed / real) * scale[:, 0], np.sqrt(ridge) * prior])
        active = np.ones(len(free), bool)
        while True:  # non-negative least squares by dropping negative weights
            weights = np.zeros(len(free))
            weights[active] = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
            if all(w >= 0 or n in CORRECTIONS for n, w in zip(free, weights, strict=True)):
                break
            active &= (weights > 0) | np.array([n in CORRECTIONS for n in free])
        error = (fixed + features @ weights) / real - AIM
        penalty = np.where(error < 0, UNDER_PENALTY, 1.0)
    return {n: round(float(w) * 16) / 16 for n, w in zip(free, weights, strict=True)}


def speed_ratio(texts: Sequence[str], count: Callable[[str], object], rounds: int = 5) -> float:
    """tiktoken's best time over `count`'s best time on the same texts, interleaved."""
    encode = corpora.o200k().encode_ordinary
    best = {"tiktoken": float("inf"), "ours": float("inf")}
    for _ in range(rounds):
        for name, function in (("tiktoken", encode), ("ours", count)):
            start = time.perf_counter()
            for text in texts:
                function(text)
            best[name] = min(best[name], time.perf_counter() - start)
    return best["tiktoken"] / best["ours"]


def measure() -> tuple[list[str], dict[str, float]]:
    encoding = corpora.o200k()
    rows = [
        "| kind | held-out samples | o200k tokens | nbagent | samples from…to | chars/4 |"
        " nbagent, training half |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    errors: dict[str, float] = {}
    everything: list[str] = []
    for name, make in corpora.CORPORA.items():
        corpus = make()
        everything += corpus.held_out

        def error(texts: list[str]) -> tuple[float, float, float]:
            real = [len(encoding.encode_ordinary(t)) for t in texts]
            ours = [estimate_tokens(t) for t in texts]
            each = [o / r - 1 for o, r in zip(ours, real, strict=True)]
            return sum(ours) / sum(real) - 1, min(each), max(each)

        held, low, high = error(corpus.held_out)
        trained = error(corpus.train)[0]
        real = sum(len(encoding.encode_ordinary(t)) for t in corpus.held_out)
        naive = sum(len(t) for t in corpus.held_out) / 4 / real - 1
        errors[name] = held
        rows.append(
            f"| {name} | {len(corpus.held_out)} | {real:,} | {held:+.1%} | "
            f"{low:+.0%}…{high:+.0%} | {naive:+.0%} | {trained:+.1%} |"
        )
    joined = "\n".join(everything)
    ratios = {
        "one text": speed_ratio([joined], estimate_tokens),
        "per sample": speed_ratio(everything, estimate_tokens),
        "per 200 chars": speed_ratio(
            [joined[i : i + 200] for i in range(0, len(joined), 200)], estimate_tokens
        ),
    }
    return rows, {**errors, **{f"speed: {k}": v for k, v in ratios.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the weights and print them")
    parser.add_argument("--only", help="with --fit: the weights to refit, comma-separated "
                        "(the others stay as they are)")
    args = parser.parse_args()
    if args.fit:
        encoding = corpora.o200k()
        samples = [
            (name, text, len(encoding.encode_ordinary(text)))
            for name, make in corpora.CORPORA.items()
            for text in make().train
        ]
        only = args.only.split(",") if args.only else None
        for name, weight in fit(samples, only).items():
            print(f'    "{name}": {weight},')
        return
    rows, figures = measure()
    encoding = corpora.o200k()
    names = corpora.cjk_names().held_out
    names_error = (sum(estimate_tokens(t) for t in names)
                   / sum(len(encoding.encode_ordinary(t)) for t in names) - 1)
    worst_low = min(v for k, v in figures.items() if not k.startswith("speed"))
    worst_high = max(v for k, v in figures.items() if not k.startswith("speed"))
    speed = {k.removeprefix("speed: "): v for k, v in figures.items() if k.startswith("speed")}
    body = "\n".join(rows) + (
        f"\n\nHeld-out error from {worst_low:+.1%} to {worst_high:+.1%} (target: within ±10% on "
        "every kind and never below −5%). Error = (estimate − o200k_base) / o200k_base over "
        'the held-out half of each corpus; "samples from…to" is the range over single '
        "samples of about 4,000 characters (CJK prose: a few hundred, as a reply is). "
        "The weights are fitted on the other half "
        "(`--fit`), which comes from other files or other seeds. Corpora are built by "
        "`bench/corpora.py` from the Python stdlib, numpy, pandas, babel, JupyterLab and "
        "nbconvert as installed, Chinese, Japanese and Korean prose written for the bench "
        "(`bench/texts/`, each half written apart), plus seeded generated data. Not a kind "
        f"and not fitted: CLDR's names of places and languages strung into sentences, "
        f"{names_error:+.1%} (rare characters that o200k does not merge: a table of such "
        "names is counted low by about that much).\n\n"
        "Speed, as tiktoken's time over the estimator's on the same held-out text "
        "(above 1: the estimator is faster; one run, best of 5, interleaved): "
        + ", ".join(f"{k} {v:.1f}×" for k, v in speed.items())
        + " (target: at least 1×).\n\n"
        "The estimator is the fallback. Where the model's tokenizer is at hand offline, "
        "`nbagent.agent.models._counters.counter_for` counts exactly: OpenAI models with tiktoken "
        "(o200k_base, or cl100k_base for GPT-4 and 3.5) from the files litellm ships, "
        "DeepSeek V3/R1 with the tokenizer file litellm ships; the embedded model with its "
        "own chat template and tokenizer, in process. Real usage calibrates either."
    )
    print(body)
    write_section("estimator_accuracy", "Token estimator accuracy and speed", body)


if __name__ == "__main__":
    main()
