"""Memory fidelity: after compaction, is the work still there?

    python bench/fidelity.py            # prints the table, writes docs/fidelity.md
    python bench/fidelity.py --local    # ... with the embedded SmolLM2 as a summarizer (slow)
    python bench/fidelity.py --json

Seeded, generated data-science sessions (file paths, DataFrame, column and variable
names, error lines, numbers, four user decisions each, and three rounds whose code the
agent runs for real through `run_code`: `fidelity_code`) run through nbagent's public
`CompactionController` on an 8,192-token window, compacting as it decides, then once by
`compact_now(focus=...)`. Each summarizer is scored on what the history still shows:
identifiers, user messages (whole or shortened with a recall handle), the first request
and the latest ask after every compaction, the decisions, the results the assistant
reported, probe questions (where is a file, what was a number, what was decided and why,
what to do next: each answerable when one line the model sees holds its answer), what
only the code's runs produced (after every compaction), and the size. The same sessions go
through the real agent against servers that cut a prompt under a window stated too large,
under-report their usage, or refuse past a 4,096-token window with pastes
(`fidelity_servers`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fidelity_code import CodeFact, CodeRounds, error_line, header, printed, visible
from fidelity_servers import SERVER_PATHS, Served, run_agent

from nbagent import CompactionController, History, Settings
from nbagent.compaction import SECTIONS, with_notebook_state

WINDOW = 8_192
LONG_ROUNDS = 150
MODEL = "bench/fidelity"
DOC = Path(__file__).parents[1] / "docs" / "fidelity.md"
SYSTEM = {"role": "system", "content": "You are a careful data scientist working in a Jupyter "
          "notebook. Use the python tool to run code."}
FOCUS = "keep the column names, the file paths and every decision the user made"
Message = dict[str, Any]

DOMAINS = {  # columns; the first is a key, then three numeric ones, a category, the target
    "sales": ["order_id", "units", "unit_price", "discount_pct", "region", "revenue",
              "order_date", "store", "cohort"],
    "churn": ["customer_id", "tenureMonths", "monthly_fee", "support_calls", "plan",
              "churned", "signup_date", "region", "cohort"],
    "sensor": ["device_id", "temperature_c", "humidity", "vibration", "site", "failed",
               "timestamp", "battery", "cohort"],
    "survey": ["respondent_id", "age", "income", "satisfaction", "country", "nps", "wave",
               "completed", "cohort"],
}
DECISIONS = [  # (what the user says, the phrase that must stay visible)
    ("Drop the rows from the old pilot, they are not comparable.", "rows from the old pilot"),
    ("Thanks. From now on fill missing {num} with the median, not the mean.",
     "fill missing {num} with the median"),
    ("Exclude anything recorded before 2022-03-01; the logger was miscalibrated.",
     "exclude anything recorded before 2022-03-01"),
    ("Good. Let's treat 'n/a' and empty strings as missing everywhere.",
     "treat 'n/a' and empty strings as missing"),
    ("Use 2023 as the holdout year and train only on earlier data.",
     "use 2023 as the holdout year"),
    ("Cap {num} at its 99th percentile before any model sees it.",
     "cap {num} at its 99th percentile"),
    ("OK, that looks right. Keep only the EU regions for the report.",
     "keep only the eu regions"),
    ("Report money in euros, converted at 0.92 per dollar.", "report money in euros"),
]


WHY = {  # a decision's key phrase → the reason the user gave with it
    "rows from the old pilot": "not comparable",
    "fill missing {num} with the median": "not the mean",
    "exclude anything recorded before 2022-03-01": "miscalibrated",
    "treat 'n/a' and empty strings as missing": "everywhere",
    "use 2023 as the holdout year": "train only on earlier data",
    "cap {num} at its 99th percentile": "before any model sees it",
    "keep only the eu regions": "for the report",
    "report money in euros": "0.92 per dollar",
}
REGIONS = ["EMEA-North", "APAC-South", "Americas-West", "EMEA-Central"]


@dataclass(frozen=True)
class Probe:
    """A question whose answer is one line of what the model sees holding every `needs`."""

    kind: str  # path, number, decision, next
    question: str
    needs: tuple[str, ...]


_PROSE = [
    "I checked the result against the row counts from the previous step and they agree.",
    "The distribution has a long right tail, so the mean sits well above the median here.",
    "Nothing in this step changes the earlier cleaning; the frame keeps the same index.",
    "If you want, I can break this down further by month or by the category column next.",
    "A log scale would make the plot easier to read because a few values dominate it.",
    "The missing values cluster in the first weeks of the export, before the schema fix.",
    "These numbers are computed on the filtered frame, not on the raw export.",
    "I kept the dtypes as they were; converting now would hide the text placeholders.",
    "The correlation is modest, so I would not read much into it without a holdout check.",
    "Memory use is fine: the frame takes a few megabytes, so no chunking is needed.",
]


@dataclass
class Round:
    messages: list[Message]  # the ask, each tool call and its result, the answer
    state: str  # the notebook state (variables) after this round
    facts: list[CodeFact] = field(default_factory=list)  # what this round's runs produced


@dataclass
class Session:
    seed: int
    rounds: list[Round]
    identifiers: list[str]
    decisions: list[str]  # the phrases that must stay visible
    results: list[str] = field(default_factory=list)  # the findings reported, verbatim
    probes: list[Probe] = field(default_factory=list)

    @property
    def code_facts(self) -> list[CodeFact]:
        return [fact for round_ in self.rounds for fact in round_.facts]


def _table(rng: random.Random, columns: Sequence[str], rows: int) -> str:
    widths = [max(len(c), 9) for c in columns]
    lines = ["     " + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    for r in range(rows):
        cells = [f"{rng.uniform(0, 500):.2f}".rjust(w) for w in widths]
        lines.append(f"{r:<5}" + "  ".join(cells))
    return "\n".join(lines)


def _info(frame: str, columns: Sequence[str], rows: int) -> str:
    lines = ["<class 'pandas.core.frame.DataFrame'>",
             f"RangeIndex: {rows} entries, 0 to {rows - 1}",
             f"Data columns (total {len(columns)} columns):",
             " #   Column          Non-Null Count  Dtype", "---  ------          ----------  -----"]
    for i, column in enumerate(columns):
        dtype = "object" if i % 3 == 2 else ("float64" if i % 2 else "int64")
        lines.append(f" {i:<3} {column:<15} {rows - i * 7} non-null   {dtype}")
    return "\n".join(lines)


def _traceback(line: str, error: str) -> str:
    return ("---------------------------------------------------------------------------\n"
            "Traceback (most recent call last)\nCell In[12], line 1\n"
            f"----> 1 {line}\n  File /opt/conda/lib/python3.11/site-packages/pandas/core/"
            "frame.py:3761, in DataFrame.__getitem__(self, key)\n" + error)


def make_session(seed: int, rounds: int = 60, code: bool = False) -> Session:
    """A seeded data-science session: load, inspect, hit errors, decide, clean, model.

    `code` adds three rounds whose code the agent runs for real through `run_code` (a
    value, indicator columns, an error and its fix: `fidelity_code`). The bench runs with
    them; without them (the default) a session is the one the engine's tests read, four
    messages a round and no agent."""
    rng = random.Random(seed)
    name = rng.choice(sorted(DOMAINS))
    columns = DOMAINS[name]
    year = rng.choice([2022, 2023, 2024])
    raw_path, ref_path = f"data/raw/{name}_{year}.csv", f"data/ref/{name}_lookup.parquet"
    clean_path, model_path = f"data/clean/{name}_clean.parquet", f"models/{name}_gbm.pkl"
    numeric, category, target = columns[1:4], columns[4], columns[5]
    figure_path = f"reports/figures/{name}_by_{category}.png"
    raw, clean = rng.choice(["raw", f"{name}_df", "df_raw"]), rng.choice(["clean", "tidy"])
    ratio_col = f"{numeric[1]}_per_{numeric[0]}"
    decisions = rng.sample(DECISIONS, 4)
    frames: dict[str, list[str]] = {}
    identifiers: list[str] = []
    results: list[str] = []
    subjects: list[str] = []
    out: list[Round] = []
    calls = 0

    def found(sentence: str, subject: str) -> str:
        results.append(sentence)
        subjects.append(subject)
        return sentence

    def seen(*names: str) -> None:
        identifiers.extend(n for n in names if n not in identifiers)

    def state() -> str:
        return "\n".join(f"{f}: DataFrame ({rng.randint(900, 5000)}, {len(c)}) columns: "
                         + ", ".join(c) for f, c in frames.items())

    def add(ask: str, code: str, output: str, answer: str) -> None:
        nonlocal calls
        calls += 1
        answer += " " + " ".join(rng.sample(_PROSE, 3))  # assistants explain at some length
        call_id = f"call_{seed}_{calls}"
        out.append(Round([
            {"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": call_id, "type": "function",
                "function": {"name": "python", "arguments": json.dumps({"code": code})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": output},
            {"role": "assistant", "content": answer},
        ], state()))

    add(f"Load {raw_path} and show me the first rows. Ground rules for the whole project: "
        f"we use median imputation for the numeric gaps, the rows of the pilot stores stay "
        f"out of everything, and every metric is reported on the {year} holdout only, never "
        "tuned on. Explain each step briefly, with the code.",
        f"import pandas as pd\n{raw} = pd.read_csv('{raw_path}')\n{raw}.head(8)",
        _table(rng, columns, 8), f"Loaded {raw} with {len(columns)} columns; {columns[0]} "
        f"looks like a key and {target} is the outcome.")
    frames[raw] = list(columns)
    seen(raw_path, raw, *columns, "recent")
    add("What types do the columns have, and where are values missing?", f"{raw}.info()",
        _info(raw, columns, 4_812), f"{category} is stored as text; {numeric[2]} has gaps.")
    typo = numeric[1][:-1]
    add(f"What's the average {numeric[1]}?", f"{raw}['{typo}'].mean()",
        _traceback(f"{raw}['{typo}'].mean()", f"KeyError: '{typo}'"),
        f"A typo on my side: the column is {numeric[1]}, not {typo}. The mean is "
        f"{rng.uniform(10, 90):.2f}.")
    add(f"Join the lookup table in {ref_path} on {columns[0]}.",
        f"lookup = pd.read_parquet('{ref_path}')\nmerged = {raw}.merge(lookup, on='{columns[0]}',"
        " how='left')\nmerged.shape, list(lookup.columns)",
        f"(({rng.randint(900, 5000)}, {len(columns) + 2}), "
        f"['{columns[0]}', 'segment_code', 'owner_team'])",
        "Merged; two lookup columns came along: segment_code and owner_team.")
    frames["lookup"] = [columns[0], "segment_code", "owner_team"]
    frames["merged"] = [*columns, "segment_code", "owner_team"]
    seen(ref_path, "lookup", "merged", "segment_code", "owner_team")
    bad = numeric[2]
    add(f"Convert {bad} to numbers.", f"merged['{bad}'] = merged['{bad}'].astype(float)",
        _traceback(f"merged['{bad}'].astype(float)",
                   "ValueError: could not convert string to float: 'n/a'"),
        f"{bad} holds the text 'n/a' in some rows, so astype fails.")
    script: list[Callable[[], None]] = []
    for phrase, _key in decisions:
        said = phrase.format(num=numeric[2])

        def decide(said: str = said) -> None:
            rows, gone = rng.randint(800, 4000), rng.randint(20, 400)
            add(said, f"{clean} = merged.copy()  # applying: {said[:40]}",
                f"{clean}.shape -> ({rows}, {len(columns) + 2})",
                "Done, noted for the rest of the analysis. " + (found(
                    f"{rows:,} rows of {clean} remain, {gone:,} fewer than before.", clean)
                    if not results else ""))
            frames[clean] = frames["merged"]
            seen(clean)

        script.append(decide)
    extra = [
        lambda: (add(f"Add a ratio column {ratio_col}.",
                     f"{clean}['{ratio_col}'] = {clean}['{numeric[1]}'] / {clean}['{numeric[0]}']",
                     f"{clean}[['{ratio_col}']].describe()\n" + _table(rng, [ratio_col], 4),
                     f"{ratio_col} added."), seen(ratio_col)),
        lambda: (add(f"Break {target} down by {category}.",
                     f"by_group = {clean}.groupby('{category}')['{target}'].agg(['mean', 'sum'])",
                     _table(rng, ["mean", "sum"], 6), f"by_group shows {category} differs. "
                     + found(f"{target} in {(region := rng.choice(REGIONS))} fell "
                             f"{rng.uniform(5, 30):.1f}% from October to December.", region)),
                 seen("by_group")),
        lambda: (add("Fit a gradient boosting model on the usual features.",
                     f"feature_cols = {numeric!r}\nX_train, X_test, y_train, y_test = "
                     f"train_test_split({clean}[feature_cols], {clean}['{target}'])\n"
                     "model = GradientBoostingClassifier(n_estimators=300).fit(X_train, y_train)",
                     f"test accuracy: {(accuracy := rng.uniform(0.7, 0.95)):.3f}",
                     "The model is fit; feature_cols holds the inputs. " + found(
                         f"Its test accuracy is {accuracy:.3f}, up from "
                         f"{accuracy - rng.uniform(0.05, 0.2):.3f} for the baseline.",
                         "accuracy")),
                 seen("feature_cols", "X_train", "X_test", "y_train", "model")),
        lambda: (add(f"Save the clean data to {clean_path} and the model to {model_path}.",
                     f"{clean}.to_parquet('{clean_path}')\njoblib.dump(model, '{model_path}')",
                     "saved", "Both saved."), seen(clean_path, model_path)),
        lambda: (add(f"Plot {target} by {category} and save it as {figure_path}.",
                     f"ax = by_group['mean'].plot.bar()\nax.figure.savefig('{figure_path}')",
                     "<Figure size 640x480 with 1 Axes>", "Saved the figure."),
                 seen(figure_path)),
    ]
    def explore() -> None:  # one column at a time, a few hundred tokens of output
        column, days = rng.choice(columns), rng.choice([7, 14, 30, 90, 365])
        add(rng.choice([f"How is {column} distributed over the last {days} days?",
                        f"Show value counts for {column} (last {days} days).",
                        f"Any outliers in {column} in the last {days} days? Keep it short."]),
            f"recent = merged[merged['{columns[6]}'] >= cutoff({days})]\n"
            f"recent['{column}'].describe(), recent['{column}'].value_counts().head(40)",
            _table(rng, [column], 8) + f"\n{column}\n"
            + "\n".join(f"{rng.randint(1, 99_999):<10}{rng.randint(5, 900)}" for _ in range(40))
            + "\nName: count, dtype: int64",
            f"{column} is skewed; the top value covers {rng.randint(5, 40)}% of rows.")

    runs = CodeRounds(seed, columns) if code else None

    def run(ask: str, codes: list[tuple[str, str]], answer: Callable[[list[str]], str]
            ) -> list[str]:
        """A round whose code the agent runs for real (`run_code`); the tool results."""
        read: list[str] = []
        prose = " ".join(rng.sample(_PROSE, 3))

        def respond(results: list[str]) -> str:
            read[:] = results
            return f"{answer(results)} {prose}"

        assert runs is not None
        out.append(Round(runs.chat(ask, codes, respond), state()))
        return read

    def ran(kind: str, *needs: str) -> None:
        if not all(needs):  # the run did not produce what the round is about: say so
            raise RuntimeError(f"a {kind} round's run produced no {kind}: {out[-1].messages}")
        out[-1].facts.append(CodeFact(kind, needs))

    def computed() -> None:  # a value only the run knows, reported by the assistant
        column = numeric[1]
        read = run(f"What is the mean {column} over all of merged? Compute it.",
                   [(f"print(round(float(merged['{column}'].mean()), 2))", f"the mean {column}")],
                   lambda results: "Computed: " + found(
                       f"the mean {column} over merged is {printed(results[-1])}.", column))
        ran("value", column, printed(read[-1]))

    def indicators() -> None:  # column names only the run's output shows
        read = run(f"Make indicator columns for {category}, join them to merged, show a few.",
                   [(f"flags = pd.get_dummies(merged['{category}'], prefix='{category}', "
                     f"dtype=int)\nmerged = merged.join(flags)\nflags.head(3)",
                     f"one indicator column per {category} value")],
                   lambda results: f"merged has one indicator column per {category} value now.")
        names = header(read[-1])
        ran("column", names[0] if names else "")
        seen("flags", *names)

    def mistyped() -> None:  # a run that fails, then its fix
        wrong, by = numeric[0][:-1], f"by_{category}"
        read = run(f"Total {numeric[0]} per {category}, please.",
                   [(f"merged.groupby('{category}')['{wrong}'].sum()",
                     f"{numeric[0]} summed per {category}"),
                    (f"{by} = merged.groupby('{category}')['{numeric[0]}'].sum()\n{by}",
                     "the same with the column spelt right")],
                   lambda results: f"My first run misspelt the column; {by} holds the totals.")
        ran("error", error_line(read[0]))
        seen(by)

    steps = ([script[0], extra[0], computed, script[1], extra[1], indicators, extra[2],
              script[2], mistyped, extra[3], script[3], extra[4]] if code else
             [script[0], extra[0], script[1], extra[1], extra[2], script[2], extra[3],
              script[3], extra[4]])
    gap = max(0, rounds - len(out) - len(steps)) / len(steps)  # spread over the session
    for index, step in enumerate(steps):
        while len(out) < 5 + round(gap * index) + index:
            explore()
        step()
    while len(out) < rounds:
        explore()
    keys = [key.format(num=numeric[2]).lower() for _, key in decisions]
    probes = [
        Probe("path", "Where is the clean data saved?", (clean_path,)),
        Probe("path", "Where did the model go?", (model_path,)),
        *(Probe("number", f"What did we find about {subject}?", (subject, *_figures(r)))
          for r, subject in zip(results, subjects, strict=True)),
        *(Probe("decision", f"Why {key}?", (key, WHY[k].format(num=numeric[2]).lower()))
          for (_, k), key in zip(decisions, keys, strict=True)),
        Probe("next", "What did the user ask for last?",
              (out[-1].messages[0]["content"],)),
    ]
    return Session(seed, out, identifiers, keys, results, probes)


def _figures(sentence: str) -> tuple[str, ...]:
    """Every figure of a reported result."""
    return tuple(re.findall(r"\d[\d,]*(?:\.\d+)?%?", sentence))


def garbage(_: list[Message]) -> str:
    return "Sure! We had a productive conversation about your data."


def bland(_: list[Message]) -> str:
    return "\n\n".join(f"## {n}. {title}\nThe user and the assistant worked on the analysis."
                       for n, title in enumerate(SECTIONS, 1))


def truncating(messages: list[Message]) -> str:
    """A decent reply cut off by an output limit: the first names it read, then nothing."""
    names = list(dict.fromkeys(re.findall(r"\b[a-z]+_[a-z_]+\b", str(messages[-1]["content"]))))
    body = "\n\n".join(f"## {n}. {title}\nWorked with {', '.join(names[:6])}."
                       for n, title in enumerate(SECTIONS, 1))
    return body[:300]


def raising(_: list[Message]) -> str:
    raise RuntimeError("the summarizing model is unavailable")


LOCAL = "embedded SmolLM2-135M (llama.cpp)"
SLOW = {LOCAL}
SUMMARIZERS: dict[str, Callable[[list[Message]], Any]] = {
    "garbage (\"Sure! We had a productive conversation\")": garbage,
    "bland (every section, one bland sentence each)": bland,
    "truncating (cut at 300 characters)": truncating,
    "raising (every call fails)": raising,
}


@dataclass
class Run:
    compactions: int = 0
    failed: int = 0
    asks_checked: int = 0
    first_kept: int = 0
    latest_kept: int = 0
    peak_tokens: int = 0
    tokens_after: int = 0
    trigger: int = 0
    breaker_opened: bool = False
    refused: int = 0  # requests the server refused or answered cut (unknown window)
    final: list[Message] = field(default_factory=list)
    produced: list[CodeFact] = field(default_factory=list)  # the code facts so far
    facts_checked: int = 0  # (compaction, code fact produced before it) pairs
    facts_kept: int = 0


def _checker(run: Run, history: History, first: str,
             after: Callable[[], None] | None = None) -> Callable[[Any, str], None]:
    """What every compaction that rewrote the history is checked for, on either path:
    the first request and the latest ask whole, each code fact produced so far visible.
    `after` runs first (the old controller's notebook-state refresh)."""

    def check(decision: Any, latest: str) -> None:
        if decision.changed:
            if after is not None:
                after()
            run.compactions += decision.action == "compacted"
            run.failed += decision.action == "failed"
            text = visible_text(history.messages)
            run.asks_checked += 1
            run.first_kept += first in text
            run.latest_kept += latest in text
            run.facts_checked += len(run.produced)
            run.facts_kept += sum(visible(fact, text) for fact in run.produced)
        run.breaker_opened |= bool(decision.breaker_open)

    return check


def _drive(session: Session, history: History, run: Run, check: Callable[[Any, str], None],
           auto: Callable[[History], Any], midloop: Callable[[History], Any],
           count: Callable[[History], int], request: Callable[[str], None] = lambda _: None,
           on_round: Callable[[Round], None] = lambda _: None) -> None:
    """The session's rounds as the loop adds them: the ask (a turn boundary, then the
    request), each tool call with its result (a mid-loop check, then the next request),
    the answer. `request` is what the server does with a request (the unknown paths)."""
    for round_ in session.rounds:
        on_round(round_)
        ask, *work, answer = round_.messages
        latest = ask["content"]
        history.append(ask)
        check(auto(history), latest)
        request(latest)
        run.peak_tokens = max(run.peak_tokens, count(history))
        for call, result in zip(work[::2], work[1::2], strict=True):  # one call a message
            history.extend([call, result])
            check(midloop(history), latest)
            request(latest)
        history.append(answer)
        run.produced.extend(round_.facts)


def run_controller(session: Session, summarize: Callable[[list[Message]], Any], *,
                   window: int = WINDOW, state: bool = False, path: str = "told") -> Run:
    """The session through the public `CompactionController` (its only use here).

    `path` is how the controller knows the window (`PATHS`): told; learned from a
    server's overflow error (the window unknown, so 200,000 is assumed, until a request
    over `window` is refused: L4, then the stated limit); or caught from a server that
    cuts an over-long prompt at the front and answers (its usage reports half its
    context, as Ollama's older runner does: the window learned is what it showed it holds,
    the most it read at once, then the usual compaction)."""
    if path != "told":
        return _run_unknown(session, summarize, window, path)
    settings = Settings(max_context_tokens=window)
    current = {"state": ""}
    refresh = ((lambda messages: with_notebook_state(messages, current["state"]))
               if state else None)
    refresh_here = False
    params = inspect.signature(CompactionController).parameters
    if "model" in params or "window" in params:
        if "model" in params:  # one object answers the model questions
            from nbagent.engine._questions import Standalone

            class Answers(Standalone):
                def refresh(self, messages: list[Message], limits: Any = None) -> list[Message]:
                    return refresh(messages) if refresh is not None else messages

            controller = CompactionController(Answers(summarize, MODEL, window, settings))
        else:  # the controller of issue 10's redesign (callables for each answer)
            controller = CompactionController(summarize=summarize, window=MODEL,
                                              settings=settings, summarizer_window=window,
                                              refresh=refresh)
        auto, midloop = controller.maybe_compact, controller.on_tool_result
        manual, count = controller.compact_now, controller.count
        trigger = controller.thresholds().auto_compact
    else:  # the controller before issue 10's redesign (no refresh hook: done here)
        old: Any = CompactionController(summarize=summarize, settings=settings,
                                        summarizer_window=window, model_info=None)
        auto = lambda h: old.maybe_compact(h, model=MODEL)  # noqa: E731
        midloop = lambda h: old.on_tool_result(h, model=MODEL)  # noqa: E731
        manual = lambda h, focus: old.compact_now(h, model=MODEL, focus=focus)  # noqa: E731
        count = lambda h: old.count(h, MODEL)  # noqa: E731
        trigger, refresh_here = old.thresholds(MODEL).auto_compact, state
    history, run = History([SYSTEM]), Run(trigger=trigger)
    check = _checker(run, history, session.rounds[0].messages[0]["content"], after=(
        (lambda: history.replace(with_notebook_state(history.messages, current["state"])))
        if refresh_here else None))
    _drive(session, history, run, check, auto, midloop, count,
           on_round=lambda round_: current.update(state=round_.state))
    check(manual(history, focus=FOCUS), session.rounds[-1].messages[0]["content"])
    run.tokens_after, run.final = count(history), history.messages
    return run


PATHS = {
    "told": "told (NBAGENT_MAX_CONTEXT_TOKENS)",
    "learned": "learned from an overflow error (L4 first)",
    "truncating": "caught from a server that cuts the prompt's front",
}


def _run_unknown(session: Session, summarize: Callable[[list[Message]], Any], window: int,
                 path: str) -> Run:
    """`run_controller` when the server states no window: before each request over the
    server's real `window`, what the agent does when the server refuses it (learned) or
    answers it cut (truncating)."""
    from nbagent.engine._questions import Standalone
    from nbagent.engine._tracker import Truncation
    from nbagent.engine._window import WindowInfo, resolve_window

    class Server(Standalone):
        learned: int | None = None

        def window(self) -> WindowInfo:
            return resolve_window(MODEL, settings=Settings(), learned=self.learned)

    answers = Server(summarize, fixed_settings=Settings(), summarizer_window=window)
    controller = CompactionController(answers)
    history, run = History([SYSTEM]), Run(trigger=0)
    check = _checker(run, history, session.rounds[0].messages[0]["content"])

    held = {"read": 0}  # the most the server read at once (a request it read whole)

    def request(latest: str) -> None:
        size = controller.count(history)
        if size <= window:
            held["read"] = max(held["read"], size)
            return
        run.refused += 1
        if path == "learned":  # the server's overflow body states its limit: L4, learned
            answers.learned = window
            check(controller.handle_ptl_error(history, (size, window)), latest)
        else:  # 200 OK on a cut prompt: learned from its usage, compacted, asked again
            cut = Truncation(size, window // 2 + 2, held["read"])
            answers.learned = cut.window_bound(answers.learned)
            check(controller.maybe_compact(history), latest)

    _drive(session, history, run, check, controller.maybe_compact, controller.on_tool_result,
           controller.count, request)
    check(controller.compact_now(history, focus=FOCUS), session.rounds[-1].messages[0]["content"])
    run.trigger = controller.thresholds().auto_compact
    run.tokens_after, run.final = controller.count(history), history.messages
    return run


def run_server(session: Session, summarize: Callable[[list[Message]], Any], path: str,
               window: int = WINDOW) -> tuple[Run, Served]:
    """The session through the real agent against a misbehaving server (`SERVER_PATHS`:
    bench/fidelity_servers.py), checked as `run_controller`'s runs are."""
    run = Run()
    served = run_agent(session, summarize, window=window, path=path, run=run,
                       checker=_checker, system=SYSTEM)
    return run, served


def evaluate_servers(summarizers: dict[str, Callable[[list[Message]], Any]],
                     seeds: Sequence[int], rounds: int, path: str) -> dict[str, dict[str, Any]]:
    sessions = [make_session(seed, rounds, True) for seed in seeds]
    results = {}
    for label, summarize in summarizers.items():
        scores, served = [], []
        for session in sessions:
            run, seen = run_server(session, summarize, path)
            scores.append(score(session, run))
            served.append(seen)
        results[label] = {
            **mean_score(scores),
            "turns": sum(s.turns for s in served),
            "turns_sent": sum(s.turns_sent for s in served),
            "cut": sum(len(s.cut) for s in served),
            "cut_after": sum(sum(1 for r in s.cut if s.found_at is not None and r > s.found_at)
                             for s in served),
            "server_refused": sum(s.refused for s in served),
            "windows": sorted({s.window for s in served}),
        }
    return results


def servers_table(by_path: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["| path | summarizer | turns sent | requests cut (after found out) | refused | "
             "window at the end | first / latest ask | decisions | user messages | "
             "identifiers | probes | code outputs | compactions (failed) |",
             "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|---:|"]
    for path, results in by_path.items():
        for label, r in results.items():
            lines.append(
                f"| {SERVER_PATHS[path]} | {label.split(' (')[0]} | {r['turns_sent']} of "
                f"{r['turns']} | {r['cut']} ({r['cut_after']}) | {r['server_refused']} | "
                f"{', '.join(r['windows'])} | {_pct(r['first_ask'])} / "
                f"{_pct(r['latest_ask'])} | {_pct(r['decisions'])} | "
                f"{_pct(r['user_messages'])} | {_pct(r['identifiers'])} | "
                f"{_pct(r['probes'])} | {_code(r)} | {r['compactions']} ({r['failed']}) |")
    return "\n".join(lines)


def visible_text(messages: Sequence[Message]) -> str:
    parts = []
    for message in messages:
        parts.append(str(message.get("content") or ""))
        parts += [str(c["function"]["arguments"]) for c in message.get("tool_calls") or ()]
    return "\n".join(parts)


def opening(text: str, limit: int = 24) -> str:
    """What must stay of a user message for it to count as visible: its opening words."""
    return text.strip()[:limit]


@dataclass
class Score:
    identifiers: float
    user_messages: float
    first_ask: float
    latest_ask: float
    decisions: float
    results: float
    probes: float
    tokens_after: int
    peak_tokens: int
    trigger: int
    compactions: int
    failed: int
    breaker_opened: bool
    missing: list[str]
    refused: int = 0
    code_kept: float = 1.0  # code facts visible after every compaction once produced
    code_outputs: float = 1.0  # code facts visible at the end


def answerable(probe: Probe, text: str) -> bool:
    """Whether one line of `text` holds every piece of the probe's answer."""
    lowered = probe.kind == "decision"
    for line in text.splitlines():
        line = line.lower() if lowered else line
        if all(need in line for need in probe.needs):
            return True
    return False


def score(session: Session, run: Run) -> Score:
    text = visible_text(run.final)
    lowered = text.lower()
    missing = [n for n in session.identifiers
               if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)]
    asks = [r.messages[0]["content"] for r in session.rounds]
    shown = sum(opening(a) in text for a in asks)
    checked = max(1, run.asks_checked)
    return Score(
        identifiers=1 - len(missing) / len(session.identifiers),
        user_messages=shown / len(asks),
        first_ask=run.first_kept / checked if run.asks_checked else 1.0,
        latest_ask=run.latest_kept / checked if run.asks_checked else 1.0,
        decisions=sum(d in lowered for d in session.decisions) / len(session.decisions),
        results=(sum(r in text for r in session.results) / len(session.results)
                 if session.results else 1.0),
        probes=(sum(answerable(p, text) for p in session.probes) / len(session.probes)
                if session.probes else 1.0),
        tokens_after=run.tokens_after, peak_tokens=run.peak_tokens, trigger=run.trigger,
        compactions=run.compactions, failed=run.failed, breaker_opened=run.breaker_opened,
        missing=missing, refused=run.refused,
        code_kept=run.facts_kept / run.facts_checked if run.facts_checked else 1.0,
        code_outputs=(sum(visible(f, text) for f in session.code_facts)
                      / len(session.code_facts) if session.code_facts else 1.0),
    )


def mean_score(scores: Sequence[Score]) -> dict[str, Any]:
    n = len(scores)
    return {
        "identifiers": sum(s.identifiers for s in scores) / n,
        "user_messages": sum(s.user_messages for s in scores) / n,
        "first_ask": sum(s.first_ask for s in scores) / n,
        "latest_ask": sum(s.latest_ask for s in scores) / n,
        "decisions": sum(s.decisions for s in scores) / n,
        "results": sum(s.results for s in scores) / n,
        "probes": sum(s.probes for s in scores) / n,
        "code_kept": sum(s.code_kept for s in scores) / n,
        "code_outputs": sum(s.code_outputs for s in scores) / n,
        "tokens_after": max(s.tokens_after for s in scores),
        "peak_tokens": max(s.peak_tokens for s in scores),
        "trigger": scores[0].trigger,
        "compactions": sum(s.compactions for s in scores),
        "failed": sum(s.failed for s in scores),
        "breaker_opened": sum(s.breaker_opened for s in scores),
        "refused": sum(s.refused for s in scores),
        "missing": sorted({m for s in scores for m in s.missing}),
    }


def evaluate(summarizers: dict[str, Callable[[list[Message]], Any]], seeds: Sequence[int],
             rounds: int = 60, state: bool = False, path: str = "told", code: bool = True
             ) -> dict[str, dict[str, Any]]:
    sessions = [make_session(seed, rounds, code) for seed in seeds]
    results = {}
    for label, summarize in summarizers.items():
        results[label] = mean_score([score(s, run_controller(s, summarize, state=state,
                                                             path=path)) for s in sessions])
    return results


def paths_table(by_path: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["| window | summarizer | first / latest ask | decisions | user messages | "
             "identifiers | probes | code outputs | requests refused or cut | "
             "compactions (failed) |",
             "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for path, results in by_path.items():
        for label, r in results.items():
            lines.append(
                f"| {PATHS[path]} | {label.split(' (')[0]} | {_pct(r['first_ask'])} / "
                f"{_pct(r['latest_ask'])} | {_pct(r['decisions'])} | "
                f"{_pct(r['user_messages'])} | {_pct(r['identifiers'])} | "
                f"{_pct(r['probes'])} | {_code(r)} | {r.get('refused', 0)} | "
                f"{r['compactions']} ({r['failed']}) |")
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _code(r: dict[str, Any]) -> str:
    return f"{_pct(r['code_kept'])} / {_pct(r['code_outputs'])}"


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| summarizer | identifiers | user messages | first / latest ask | decisions | "
             "results | probes | code outputs | tokens after (max) | peak before a request | "
             "compactions (failed) | breaker opened |",
             "|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for label, r in results.items():
        lines.append(
            f"| {label} | {_pct(r['identifiers'])} | {_pct(r['user_messages'])} | "
            f"{_pct(r['first_ask'])} / {_pct(r['latest_ask'])} | {_pct(r['decisions'])} | "
            f"{_pct(r.get('results', 0))} | {_pct(r.get('probes', 0))} | {_code(r)} | "
            f"{r['tokens_after']:,} | {r['peak_tokens']:,} | {r['compactions']} "
            f"({r['failed']}) | {r['breaker_opened']} |")
    return "\n".join(lines)


def write_doc(results: dict[str, dict[str, Any]], with_state: dict[str, dict[str, Any]],
              long: dict[str, dict[str, Any]], seeds: Sequence[int], rounds: int,
              notes: Sequence[str], by_path: dict[str, dict[str, dict[str, Any]]],
              by_server: dict[str, dict[str, dict[str, Any]]]) -> None:
    trigger = next(iter(results.values()))["trigger"]
    missing = sorted({m for r in results.values() for m in r["missing"]})
    DOC.write_text(f"""# Memory fidelity

_Written by `bench/fidelity.py`; re-run it to refresh this page._

Does compaction keep the work? {len(seeds)} generated data-science sessions (seeds
{", ".join(map(str, seeds))}; {rounds} rounds each: a first request that sets the project's
ground rules in about 300 characters, file paths, DataFrame, column and variable
names, two error tracebacks, numbers, four user decisions such as "Drop the rows from the
old pilot, they are not comparable.", and three rounds whose code really runs: a scripted
model calls the real `run_code` tool (auto) through the agent's loop and nbagent's plain
runner runs the code on a seeded DataFrame — it prints a mean, shows a table of indicator
columns, and fails on a misspelt column before its fix) run through nbagent's
`CompactionController` on an
{WINDOW:,}-token window (auto-compact trigger {trigger:,} tokens), compacting whenever it
decides to, then once more by `compact_now(focus=...)`. Figures are means over the sessions
(sizes: the largest).

- **identifiers**: of the paths, DataFrame, column and variable names the session used, the
  share still in the history after the last compaction.
- **user messages**: the share whose opening (first 24 characters) is still in the history:
  whole, or shortened with a recall handle.
- **first / latest ask**: after every compaction that rewrote the history, the share in
  which the first request and the latest ask were still whole.
- **decisions**: the share of the four decisions still visible.
- **results**: the share of the four findings the assistant reported (a count after a
  cleaning step, a value its code computed, a change by region, a model's score against its
  baseline) still visible word for word.
- **probes**: questions in the spirit of published compaction evaluations, scored without
  a model: each is answerable when one line the model sees holds its whole answer — where
  the clean data and the model were saved (the path), what each finding was (its subject
  and every figure), what the user decided and why (the decision and its reason), and what
  the user asked for last.
- **code outputs**: what only the runs produced — the value the code printed (on one line
  with its column's name), the name of the first indicator column (only the run's table
  shows it), the error line of the run that failed — as the share visible after every
  compaction that rewrote the history once the run was done / after the last compaction.
- **peak before a request**: the largest history at a turn boundary after `maybe_compact`.
- **compactions (failed)**: controller calls that rewrote the history (snips included),
  summed over the sessions; in brackets those it reported as failed. **breaker opened**:
  sessions in which the circuit breaker opened at some point.

{table(results)}

For comparison, issue 13 measured the ladder before the floor reached every level on a
session of the same kind: 33% of identifiers and 2 of 4 decisions still visible with the
garbage, the bland and the embedded summarizer alike.

With the notebook-state block (a fresh list of the live DataFrames and their columns put in
by `with_notebook_state` after each compaction, as the controller's `refresh` hook does when
the notebook context is off; with it on, the model has that list already, as a note or on
each request). It
costs its own size after every compaction; what it adds is the kernel's current truth (the
columns as they are now), which the floor's names from the transcript cannot say:

{table(with_state)}

Targets, with every summarizer: first request and latest ask 100%; user messages, decisions
and reported results 100% visible; identifiers at least 95%; probes at least 95%; the
compacted history under the trigger.

Past the target: the same sessions at {LONG_ROUNDS} rounds, where the user messages no longer
fit the floor's share of the window (a quarter of the trigger, at most 2,000 tokens). The
oldest middle messages are shortened first, those that decide nothing are cut to their first
words, and only then are the oldest left out, with a line that says how many and how to
recall them; decisions go last:

{table(long)}

At this length the session reports far more results than the floor's share for them holds
(15% of its budget, on top of the rest). The floor keeps findings (a change, a comparison, a
score) and computed results (a figure a tool's output printed just before the assistant
reported it, as "the mean … over merged is …": marked "(computed)", so the rank outlives
the output) first, then the latest others; the same subject reported again with the same
figures is kept once. Before computed results ranked first, the mean was crowded out by the
hundred exploration answers after it ("… the top value covers 28% of rows."): results 75%,
probes 91% and code outputs 70–76% / 67% on every path.

Every path a window can take. A server that states no window (an OpenAI-compatible server of
one's own; a local one that reports none gets a smaller assumption, with the same paths
after) leaves nbagent assuming 200,000 tokens until the server says otherwise: by refusing a
request with its limit (learned: L4 drops the oldest rounds, then the stated limit is the
window), or by answering a prompt it cut at the front, as Ollama does past its context length
(caught from the usage: a window it can read is learned, the history compacted and the
question asked again). The same sessions at {LONG_ROUNDS} rounds, the server's real window
{WINDOW:,}; "requests refused or cut" counts what the server refused or cut, summed over the
sessions:

{paths_table(by_path)}

A window can also be wrong the other way: stated too large (by the user, a model table, a
proxy serving a smaller model under a known name), or read from a server whose usage counts
only part of the prompt. The same sessions at {LONG_ROUNDS} rounds through the real agent
(its loop, token tracker, window learning, tool sizing and L4 room; `fidelity_servers`)
against a stand-in server that replies from the session's script and reports usage from its
own count of each request, a tokenizer 10% leaner than nbagent's estimate; the server holds
{WINDOW:,} tokens (4,096 on the pastes path). "requests cut" counts the requests the server
cut, summed over the sessions, and in brackets those cut after the session had found the
window out:

{servers_table(by_server)}

At 4,096 tokens every message is sent, but the floor's share of that window (a quarter of
the trigger, 855 tokens) cannot hold what 150 rounds of pastes decided: two decisions in
five and a third of the user messages' openings are still visible at the end (at 8,192, all
of the decisions; the rest stay in the archive, where recall finds them). That share is the
limit, not how the window was found.

Issue 42 measured these paths before: told 32,768 against a server that cuts at 16,384, 27
of 39 requests were cut in 40 turns, and in 300 turns the cut was noticed once, at turn 58
after 44 silent cuts, then kept within 26,990 tokens — still over the server's window (252
requests cut) — because the usage of each cut prompt calibrated the count down (the ratio
fell from 0.97 to 0.43); a server reporting 500 of ~1,300 tokens left a 1,000-token window
and every later chat ended blocked with the breaker open; at 4,096 a session's third message
was refused after its memory folded two messages (the tool schemas alone took 1,233 tokens).
Now the first cut may pass unseen and the second is caught by its plateau (the server reads
no more though more was sent), no cut prompt's usage calibrates anything, the window learned
is what the server showed it holds, a server whose usage contradicts what it read before
teaches nothing, and a message is refused only when the system prompt, the tools and it
cannot fit together.

Before the first request led the floor of the block L4 writes (it stayed in the history
behind that block, where the next memory pass shortened it as a later message), the learned
path kept it whole after 68% (garbage) and 70% (raising) of compactions on these sessions;
the told path 100%.

A name counts as an identifier of the floor only if the user, the code or a tool wrote it:
a name only the assistant's prose (or a summarizer's notes) shows is not kept, so the merge
round's output lists the lookup's columns that its answer names.

Identifiers lost in some run: {", ".join(f"`{m}`" for m in missing) or "none"}.

{chr(10).join(f"- {n}" for n in notes)}
""", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", action="store_true", help="add the embedded SmolLM2")
    parser.add_argument("--json", action="store_true", help="print JSON, write nothing")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--only", help="run only the summarizers whose label holds this")
    parser.add_argument("--merge", type=Path, help="add the rows of an earlier --json run "
                        "(e.g. a slow --local one) to the page")
    args = parser.parse_args(argv)
    seeds = list(range(1, args.seeds + 1))
    summarizers = dict(SUMMARIZERS)
    notes = []
    if args.local:
        import nbagent.local as local
        from nbagent.agent.models._call import summarizer

        model = local.local_model(n_ctx=WINDOW, max_tokens=local.SUMMARY_TOKENS)
        summarizers[LOCAL] = summarizer(model)
    if args.only:
        summarizers = {k: v for k, v in summarizers.items() if args.only in k}
    results = evaluate(summarizers, seeds, args.rounds)
    if args.merge:
        results.update(json.loads(args.merge.read_text(encoding="utf-8"))["results"])
    notes.append("The embedded SmolLM2-135M ran on every session (a few minutes each on "
                 "two shared cores); the with-state and long runs use the scripted ones only."
                 if LOCAL in results else
                 "The embedded SmolLM2-135M was not run here (`--local` adds it; it needs "
                 "the `local` extra and is slow on two cores).")
    scripted = {k: v for k, v in summarizers.items() if k not in SLOW}
    with_state = evaluate({k: v for k, v in scripted.items() if "raising" in k
                           or "garbage" in k}, seeds, args.rounds, state=True)
    long = evaluate(scripted, seeds, LONG_ROUNDS)
    by_path = {path: evaluate(scripted, seeds, LONG_ROUNDS, path=path) for path in PATHS}
    by_server = {path: evaluate_servers(scripted, seeds, LONG_ROUNDS, path)
                 for path in SERVER_PATHS}
    if args.json:
        json.dump({"results": results, "with_state": with_state, "long": long,
                   "paths": by_path, "servers": by_server}, sys.stdout, indent=2)
        return
    for figures in (results, with_state, long):
        sys.stdout.write(table(figures) + "\n\n")
    sys.stdout.write(paths_table(by_path) + "\n\n" + servers_table(by_server) + "\n")
    write_doc(results, with_state, long, seeds, args.rounds, notes, by_path, by_server)


if __name__ == "__main__":
    main()
