"""How close nbagent's token estimator is to o200k_base, beside chars/4 and chars/3.5.

python bench/estimator_accuracy.py        # prints a table, updates docs/performance.md
"""

from __future__ import annotations

import corpora
from report import write_section

from nbagent import estimate_tokens


def main() -> None:
    encoding = corpora.o200k()
    rows = [
        "| corpus | samples | o200k tokens | nbagent | chars/4 | chars/3.5 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for name, make in corpora.CORPORA.items():
        samples = make()
        real = sum(len(encoding.encode(s)) for s in samples)
        chars = sum(len(s) for s in samples)
        ours = sum(estimate_tokens(s) for s in samples)
        worst = max(worst, abs(ours - real) / real)

        def err(value: float, real: int = real) -> str:
            return f"{100 * (value - real) / real:+.1f}%"

        rows.append(
            f"| {name} | {len(samples)} | {real:,} | {err(ours)} | {err(chars / 4)} | "
            f"{err(chars / 3.5)} |"
        )
    body = "\n".join(rows) + (
        f"\n\nWorst corpus: {100 * worst:.1f}% (target: within ±10% on every corpus). "
        "Error = (estimate − o200k_base) / o200k_base over all samples of the corpus; "
        "corpora are built by `bench/corpora.py` from the Python stdlib, its CJK codec "
        "test files and seeded generated data (JSON records, a pandas DataFrame printout)."
    )
    print(body)
    write_section("estimator_accuracy", "Token estimator accuracy", body)


if __name__ == "__main__":
    main()
