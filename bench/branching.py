"""What folding buys: one scripted data-science session whose turns need big reads, run
with branching (the model delegates each read: `delegate`) and without (it reads in the
main conversation), in one run.

    python bench/branching.py            # prints the table, writes docs/performance.md
    python bench/branching.py --json     # one JSON object
    python bench/branching.py --small    # the small session the test runs

The session (a real `Agent`, its real tools over real files in a scratch folder): a first
request, then three big reads — a 2 MB log, a 200,000-row CSV, a folder of 20 reports —
each followed by a user's decision, then a last ask. The reads go through `read_file`
(the real tool, pages of at most 16,000 characters); the findings each reply or report
states are computed from the files, so they are true of the data. The model is scripted
(`ScriptedModel`); its usage is the request's own count (nbagent's estimator), priced at
$2.50 / $10 per million input / output tokens, and at $0.15 / $0.60 for a cheaper
delegate model. The summarizer writes every section in its own words (no user text
verbatim), so what stays in view verbatim is what nbagent keeps or what never left.

Figures: the main window's tokens at the end, the main model's largest request, every
token billed (main and branches), the cost, the compactions of the main history and of
the branches, and whether the first request, each decision and each finding are in the
last request the main model receives.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from nbagent import Agent, Settings, Usage
from nbagent.compaction import SECTIONS, is_summary_request
from nbagent.engine._tokens import count_message_tokens, count_tools_tokens
from nbagent.testing import ScriptedModel, Step, calls, reply

WINDOW = 32_000  # a local model's window: three big reads do not fit in it
MAIN = ("openai/gpt-4o", 2.50, 10.00)  # (name, $ per million input, output tokens)
CHEAP = ("openai/gpt-4o-mini", 0.15, 0.60)
FIRST = ("I'm preparing the Q3 churn review for the board: find what drives churn in our "
         "data and keep every decision we take on the way.")
DECISIONS = ("Decision: treat 'disk full' errors as an infrastructure issue, not churn.",
             "Decision: drop the rows whose region is 'test' — they are synthetic.",
             "Decision: the target is churned_90d, not churned_30d.")
LAST = "Write the modelling plan we agreed on, with every decision."
REGIONS = ("north", "south", "east", "west", "central", "test")
ERROR_KINDS = ("disk full on /dev/sdb", "timeout calling billing-api", "checksum mismatch")


@dataclass(frozen=True)
class Size:
    log_bytes: int
    csv_rows: int
    reports: int
    pages: int  # pages each big read takes (of 500 lines; a report is one page)


FULL = Size(log_bytes=2_000_000, csv_rows=200_000, reports=20, pages=10)
SMALL = Size(log_bytes=200_000, csv_rows=20_000, reports=5, pages=3)


@dataclass
class Data:
    folder: Path
    findings: list[str] = field(default_factory=list)  # one sentence per big read


def make_data(folder: Path, size: Size, seed: int = 7) -> Data:
    """The files, and the findings a careful reader states about each (from the files)."""
    rng = random.Random(seed)
    data = Data(folder)
    log_lines, counts = [], dict.fromkeys(ERROR_KINDS, 0)
    total = 0
    number = 0
    while total < size.log_bytes:
        if number % 997 == 0:
            kind = ERROR_KINDS[rng.randrange(len(ERROR_KINDS))]
            counts[kind] += 1
            line = f"2026-09-{1 + number % 30:02d} 10:{number % 60:02d} ERROR {kind}"
        else:
            line = (f"2026-09-{1 + number % 30:02d} 10:{number % 60:02d} INFO request "
                    f"{number} served in {rng.randrange(5, 900)} ms for customer "
                    f"C{rng.randrange(10**6):06d}")
        log_lines.append(line)
        total += len(line) + 1
        number += 1
    (folder / "logs").mkdir()
    (folder / "logs" / "app.log").write_text("\n".join(log_lines) + "\n")
    errors = ", ".join(f"{counts[k]} '{k}'" for k in ERROR_KINDS)
    data.findings.append(f"logs/app.log has {sum(counts.values())} ERROR lines: {errors}.")
    rows, revenue, churned = [], 0.0, 0
    for row in range(size.csv_rows):
        region = REGIONS[rng.randrange(len(REGIONS))]
        amount = round(rng.uniform(5, 500), 2)
        gone = int(rng.random() < 0.18)
        revenue += amount
        churned += gone
        rows.append(f"C{row:06d},{region},{amount},{gone},{int(rng.random() < 0.3)}")
    (folder / "sales.csv").write_text("customer,region,revenue,churned_90d,churned_30d\n"
                                      + "\n".join(rows) + "\n")
    data.findings.append(f"sales.csv has {size.csv_rows:,} rows and the columns customer, "
                         f"region, revenue, churned_90d, churned_30d; mean revenue "
                         f"{revenue / size.csv_rows:.2f}, churned_90d rate "
                         f"{churned / size.csv_rows:.3f}.")
    (folder / "reports").mkdir()
    flagged: dict[str, int] = {}
    for n in range(size.reports):
        region = REGIONS[n % 5]
        flagged[region] = flagged.get(region, 0) + 1
        body = "\n".join(f"Week {w}: {region} retention {rng.uniform(0.6, 0.95):.3f}; "
                         f"notes: " + "steady " * 12 for w in range(120))
        (folder / "reports" / f"report_{n:02d}.md").write_text(
            f"# Report {n:02d}\nFlagged region: {region}\n{body}\n")
    named = ", ".join(f"{r} ({c})" for r, c in sorted(flagged.items()))
    data.findings.append(f"The {size.reports} reports in reports/ flag the regions {named}.")
    return data


class PricedModel(ScriptedModel):
    """A scripted model that bills each request as a provider would: its prompt counted
    as nbagent counts what it sends, its reply likewise, at the model's prices."""

    def __init__(self, steps: list[Any], name: str, prices: tuple[float, float]) -> None:
        super().__init__(steps, name=name)
        self.prices = prices
        self.prompts: list[int] = []  # each request's prompt tokens, as billed

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kw: Any
                 ) -> Any:
        done = super().complete(messages, tools, **kw)
        prompt = sum(count_message_tokens(m) for m in messages) + count_tools_tokens(tools)
        output = count_message_tokens(done.message)
        self.prompts.append(prompt)
        return replace(done, usage=Usage(input_tokens=prompt, output_tokens=output),
                       cost=(prompt * self.prices[0] + output * self.prices[1]) / 1e6)


def summarize(messages: list[dict[str, Any]]) -> str:
    """A summarizer in its own words: every section, no user text copied."""
    prompt = str(messages[-1]["content"])
    if not is_summary_request(prompt):
        return "- the analysis went on: files were read and findings reported"
    return "\n\n".join(f"## {n}. {title}\n- the work on the churn review so far"
                       for n, title in enumerate(SECTIONS, 1))


def reads(size: Size) -> list[tuple[str, str, list[Step]]]:
    """Each big read: the user's ask, the task a delegate gets, the read_file calls."""
    log = [calls(("read_file", {"path": "logs/app.log", "offset": 500 * p, "limit": 500}))
           for p in range(size.pages)]
    csv = [calls(("read_file", {"path": "sales.csv", "offset": 500 * p, "limit": 500}))
           for p in range(size.pages)]
    folder = [calls(("read_file", {"path": f"reports/report_{n:02d}.md", "limit": 500}))
              for n in range(size.reports)]
    return [("How many errors does logs/app.log hold, and of which kinds?",
             "Count the ERROR lines of logs/app.log by kind.", log),
            ("Load sales.csv: its columns, row count, mean revenue and churn rate?",
             "Describe sales.csv: columns, rows, mean revenue, churned_90d rate.", csv),
            ("Which regions do the reports in reports/ flag?",
             "List the regions the reports in reports/ flag, with counts.", folder)]


def script(size: Size, data: Data, branching: bool) -> tuple[list[Any], list[Any]]:
    """The main model's steps and the delegate's, turn by turn."""
    main: list[Any] = [reply("Understood: I'll work through the data and log decisions.")]
    delegate: list[Any] = []
    for (_, task, pages), finding, decision in zip(reads(size), data.findings, DECISIONS,
                                                  strict=True):
        if branching:
            main.append(calls(("delegate", {"task": task, "data": [task.split()[-1]]})))
            delegate += [*pages, reply(finding)]
        else:
            main += pages
        main += [reply(finding), reply(f"Noted. {decision}")]
    main.append(reply("The plan: " + " ".join(data.findings) + " " + " ".join(DECISIONS)))
    return main, delegate


@dataclass
class Run:
    branching: bool
    main_tokens_end: int
    main_tokens_peak: int
    billed_tokens: int
    branch_tokens: int  # of those, the branches'
    cost: float
    cost_cheap_delegate: float  # the same run with the branches priced as the cheap model
    main_compactions: int
    branch_compactions: int
    first_request_in_view: bool
    decisions_in_view: int
    findings_in_view: int
    requests: int


@contextlib.contextmanager
def working_in(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_session(size: Size, branching: bool, data: Data, scratch: Path) -> Run:
    main_steps, delegate_steps = script(size, data, branching)
    model = PricedModel(main_steps, *MAIN[:1], prices=MAIN[1:])
    helper = PricedModel(delegate_steps, *MAIN[:1], prices=MAIN[1:])
    agent = Agent(model=model, delegate_model=helper, namespace={}, summarize=summarize,
                  settings=Settings(max_context_tokens=WINDOW, data_dir=str(scratch),
                                    notebook_context=False))
    with working_in(data.folder):
        agent.chat(FIRST)
        for (ask, _, _), decision in zip(reads(size), DECISIONS, strict=True):
            agent.chat(ask)
            agent.chat(decision)
        agent.chat(LAST)
    model.assert_consumed()
    helper.assert_consumed()
    last = json.dumps(model.requests[-1])
    branches = agent.branches()
    billing = agent.billing()
    branch_in = sum(b.prompt_tokens for b in branches)
    branch_out = sum(b.output_tokens for b in branches)
    cheap = agent.cost - sum(b.cost for b in branches) + (
        branch_in * CHEAP[1] + branch_out * CHEAP[2]) / 1e6
    result = Run(
        branching=branching, main_tokens_end=agent.context_state().tokens,
        main_tokens_peak=max(model.prompts),
        billed_tokens=billing.prompt_tokens + billing.output_tokens,
        branch_tokens=branch_in + branch_out, cost=agent.cost, cost_cheap_delegate=cheap,
        main_compactions=sum(d.action == "compacted" for d in agent.controller.decisions),
        branch_compactions=sum(b.compactions for b in branches),
        first_request_in_view=json.dumps(FIRST)[1:-1] in last,
        decisions_in_view=sum(json.dumps(d)[1:-1] in last for d in DECISIONS),
        findings_in_view=sum(json.dumps(f)[1:-1] in last for f in data.findings),
        requests=billing.requests)
    agent.close()
    return result


def run(size: Size = FULL) -> list[Run]:
    """Both sessions over the same files: without branching, then with it."""
    with tempfile.TemporaryDirectory(prefix="nbagent-branching-") as scratch:
        root = Path(scratch)
        (root / "work").mkdir()
        data = make_data(root / "work", size)
        return [run_session(size, branching, data, root / f"data-{branching}")
                for branching in (False, True)]


def table(runs: list[Run], size: Size) -> str:
    without, with_ = runs
    rows = [
        ("main window at the end (tokens)", "main_tokens_end", "{:,}"),
        ("main model's largest request (tokens)", "main_tokens_peak", "{:,}"),
        ("tokens billed, all requests", "billed_tokens", "{:,}"),
        ("… of which the branches'", "branch_tokens", "{:,}"),
        ("requests", "requests", "{:,}"),
        ("cost, one model ($2.50 / $10 per M)", "cost", "${:.3f}"),
        ("cost, branches on a $0.15 / $0.60 model", "cost_cheap_delegate", "${:.3f}"),
        ("compactions of the main history", "main_compactions", "{}"),
        ("compactions inside the branches", "branch_compactions", "{}"),
        ("first request in the last request", "first_request_in_view", "{}"),
        (f"decisions in view (of {len(DECISIONS)})", "decisions_in_view", "{}"),
        (f"findings in view (of {len(DECISIONS)})", "findings_in_view", "{}"),
    ]
    lines = ["| | without branching | with branching |", "|---|---:|---:|"]
    for label, name, shape in rows:
        lines.append(f"| {label} | {shape.format(getattr(without, name))} | "
                     f"{shape.format(getattr(with_, name))} |")
    return "\n".join(lines)


def write_docs(runs: list[Run], size: Size) -> None:
    from report import write_section

    without, with_ = runs
    ratio = without.main_tokens_peak / max(1, with_.main_tokens_peak)
    kept = ("kept the first request and every decision word for word"
            if without.first_request_in_view and without.decisions_in_view == len(DECISIONS)
            else "lost some of what the user said")
    prose = " ".join(f"""One scripted session on a {WINDOW:,}-token window: a first request,
three big reads (a {size.log_bytes / 1e6:.0f} MB log, a {size.csv_rows:,}-row CSV,
{size.reports} reports in a folder; {size.pages} pages of 500 lines per file read, each
report one page), a decision after each, and a last ask; the same steps with the reads done
in the main conversation or delegated (`delegate`), in one run. With branching the main
model's largest request is **{ratio:.1f}×** smaller and the main history is never
compacted (the branches compacted their own {with_.branch_compactions} times); without
it, the main history was compacted {without.main_compactions} times and the floor
{kept}. Tokens billed fall by {1 - with_.billed_tokens / without.billed_tokens:.0%} on
one model, as each read is sent again only within its branch's few requests, not with
every later request of the session; on a cheaper delegate model the session costs
{with_.cost_cheap_delegate / without.cost:.0%} of reading in the main conversation. The
model is scripted and billed by nbagent's own count of each request; the summarizer writes
in its own words (no user text verbatim). "In view": the text is, word for word, in the
last request the main model receives.""".split())
    write_section("branching", "What folding buys: delegated big reads",
                  f"{table(runs, size)}\n\n{prose}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--small", action="store_true", help="the small session")
    args = parser.parse_args(argv)
    size = SMALL if args.small else FULL
    runs = run(size)
    if args.json:
        print(json.dumps({"size": asdict(size), "runs": [asdict(r) for r in runs]}))
        return 0
    print(table(runs, size))
    if not args.small:
        write_docs(runs, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
