"""Write a benchmark's figures into its own section of docs/performance.md (or another
doc's, as bench/embedded_answers.py does docs/models.md's)."""

from __future__ import annotations

import platform
import re
from pathlib import Path

PERFORMANCE = Path(__file__).parents[1] / "docs" / "performance.md"
HEADER = """# Performance

Figures written by the benchmarks in `bench/`; each section says which script
wrote it and on what machine. Re-run a script to refresh its section. Tests
never assert timings: these machines are shared and noisy, so only ratios
measured within one run are compared.
"""


def write_section(name: str, title: str, body: str, *, doc: Path = PERFORMANCE) -> None:
    """Write the section `name` of `doc` (docs/performance.md unless told)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    machine = (
        f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
    )
    block = (
        f"<!-- bench:{name} -->\n## {title}\n\n_Written by `bench/{name}.py` on {machine}._\n\n"
        f"{body.strip()}\n<!-- /bench:{name} -->"
    )
    pattern = re.compile(rf"<!-- bench:{name} -->.*?<!-- /bench:{name} -->", re.DOTALL)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else f"{text.rstrip()}\n\n{block}\n"
    )
    doc.write_text(text, encoding="utf-8")
