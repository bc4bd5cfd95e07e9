"""The yoagent cache-replay scenario, run through nbagent's CompactionController.

    python bench/cache_replay.py --json     # one JSON object, the figures per length
    python bench/cache_replay.py            # also writes docs/performance.md (+ an SVG plot)
    python bench/cache_replay.py --sweep    # ... with a sweep of the knobs for the plot

Each request is rendered as the JSON body a provider receives; hit rate is
1 − uncached bytes / total bytes, where a request's uncached bytes are those after
its common prefix with the previous request; tokens are bytes / 4 (yoagent's
measure). Every request must fit the 98,400-token budget: the bench asserts it.
The summarizer is deterministic and ships here: no model, no network.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from typing import Any

from nbagent import CompactionController, History, Settings, thresholds
from nbagent.compaction import SECTIONS, is_summary_request
from nbagent.engine._output import cap_output, output_cap
from nbagent.engine._questions import Standalone

BUDGET = 98_400
FIRST_REQUEST = "Refactor the provider layer."
SYSTEM = {"role": "system", "content": "You are a coding agent. Use tools to inspect and edit."}
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("bash", "edit_file", "read_file", "search")
]
PRICES = {"deepseek": (0.27, 0.07), "anthropic": (3.00, 0.30)}  # $ per million: input, cached
YOAGENT = {  # yoagent 0.18, measured by a faithful re-run of this replay
    300: {
        "hit_rate": 0.9569,
        "mean_request_tokens": 63_541,
        "cost_deepseek": 1.4985,
        "cost_anthropic": 7.9347,
    },
    1200: {
        "hit_rate": 0.9539,
        "mean_request_tokens": 60_553,
        "cost_deepseek": 5.7563,
        "cost_anthropic": 30.8415,
    },
    2400: {
        "hit_rate": 0.9527,
        "mean_request_tokens": 59_033,
        "cost_deepseek": 11.2566,
        "cost_anthropic": 60.5804,
    },
}
MODEL = "bench/replay"


def tool_for(t: int) -> tuple[str, int]:
    slot = t % 100
    if slot <= 40:
        return "bash", 40 + (37 * t) % 700
    if slot <= 76:
        return "edit_file", 1 + (3 * t) % 4
    if slot <= 95:
        return "read_file", min(100 + (53 * t) % 1400, 500)
    return "search", 10 + (17 * t) % 120


def turn_messages(t: int, cap: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    tool, lines = tool_for(t)
    call = {
        "id": f"tc-{t}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps({"arg": f"target-{t}"})},
    }
    result = "\n".join(f"turn {t} {tool} line {i}: " + "data " * 6 for i in range(lines))
    if cap is not None:  # as the agent does on arrival
        result = cap_output(result, cap, ref=f"tc-{t}")
    return (
        {
            "role": "assistant",
            "content": f"Turn {t}: inspecting the workspace before the next edit.",
            "tool_calls": [call],
        },
        {"role": "tool", "tool_call_id": f"tc-{t}", "content": result},
    )


_TOOLS_TEXT = json.dumps(TOOLS, ensure_ascii=False)


def render(messages: list[dict[str, Any]]) -> str:
    """The request as the provider's prompt sees it: tool schemas, then each message
    in order (one JSON object a line), so an appended message extends it byte for byte."""
    return "\n".join([_TOOLS_TEXT, *(json.dumps(m, ensure_ascii=False) for m in messages)])


def request_tokens(history: History, model: str = MODEL) -> int:
    return len(render(history.messages).encode()) // 4


_CALL = re.compile(r"\[assistant calls (\w+) \(tc-(\d+)\)\]")
_ASK = re.compile(r"^\[user\]\n(.+)$", re.MULTILINE)


def summarize(messages: list[dict[str, Any]]) -> str:
    """A deterministic summarizer: one note per tool call and every user ask, verbatim.

    Writes every section when asked for a full summary, plain notes otherwise.
    """
    prompt = str(messages[-1]["content"])
    conversation = prompt.split("<conversation>")[-1]
    notes = [f"- turn {t}: ran {tool} on target-{t}" for tool, t in _CALL.findall(conversation)]
    asks = [f"- user: {a}" for a in _ASK.findall(conversation)]
    if not is_summary_request(prompt):
        return "\n".join(asks + notes) or "- nothing new"
    body = {"Primary Request and Intent": FIRST_REQUEST,
            "All user messages": "\n".join(asks) or "None.",
            "Current Work": "\n".join(notes[-20:]) or "None."}
    assert set(body) <= set(SECTIONS), f"not a section: {set(body) - set(SECTIONS)}"
    return "\n\n".join(f"## {n}. {title}\n{body.get(title, 'None.')}"
                         for n, title in enumerate(SECTIONS, 1))


@dataclass
class Result:
    turns: int
    hit_rate: float
    rewrites: int
    compactions: int
    max_request_tokens: int
    mean_request_tokens: int
    cost_deepseek: float
    cost_anthropic: float
    first_request_kept: bool
    latest_ask_kept: bool


def common_prefix(a: bytes, b: bytes) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search on equal prefixes: fast on 400 KB bodies
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def window_for(trigger: int) -> int:
    """The context window whose auto-compact trigger (no known max output) is `trigger`."""
    window = round(trigger / 0.835)
    while (
        thresholds(
            MODEL, settings=Settings(max_context_tokens=window), model_info=None
        ).auto_compact
        > trigger
    ):
        window -= 1
    return window


def run(turns: int, knobs: dict[str, Any] | None = None, trigger: int = BUDGET) -> Result:
    settings = Settings(max_context_tokens=window_for(trigger), **(knobs or {}))
    class Answers(Standalone):
        def count(self, history: History, limits: Any = None) -> int:
            return request_tokens(history, MODEL)

    controller = CompactionController(Answers(summarize, MODEL, None, settings))
    limits = thresholds(MODEL, settings=settings, model_info=None)
    cap = output_cap(settings.tool_output_max_chars, limits.scale)  # as the agent does
    history = History([SYSTEM, {"role": "user", "content": FIRST_REQUEST}])
    previous = b""
    total = uncached = 0
    sizes: list[int] = []
    rewrites = 0
    cost = dict.fromkeys(PRICES, 0.0)
    latest_ask = FIRST_REQUEST
    compacted_at: set[int] = set()
    first_kept = latest_kept = True
    for t in range(1, turns + 1):
        if t % 5 == 0:
            latest_ask = f"Also check item {t} while you are there."
            history.append({"role": "user", "content": latest_ask})
        decision = controller.maybe_compact(history)
        body = render(history.messages).encode()
        if decision.changed:
            compacted_at.add(t)
            text = body.decode()
            first_kept &= FIRST_REQUEST in text
            latest_kept &= latest_ask in text
        assert len(body) / 4 <= BUDGET, f"turn {t}: {len(body) / 4:,.0f} tokens over the budget"
        shared = common_prefix(previous, body)
        if shared < len(previous):
            rewrites += 1
        fresh = len(body) - shared
        total += len(body)
        uncached += fresh
        sizes.append(len(body) // 4)
        for name, (price, cached_price) in PRICES.items():
            cost[name] += (fresh / 4 * price + shared / 4 * cached_price) / 1e6
        previous = body
        history.extend(turn_messages(t, cap))
    return Result(
        turns,
        round(1 - uncached / total, 4),
        rewrites,
        len(compacted_at),
        max(sizes),
        round(sum(sizes) / len(sizes)),
        round(cost["deepseek"], 4),
        round(cost["anthropic"], 4),
        first_kept,
        latest_kept,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object and nothing else"
    )
    parser.add_argument("--sweep", action="store_true", help="also sweep the knobs for the plot")
    parser.add_argument("--turns", type=int, nargs="*", default=[300, 1200, 2400])
    args = parser.parse_args(argv)
    results = [run(n) for n in args.turns]
    print(json.dumps({"results": [asdict(r) for r in results]}, indent=None if args.json else 2))
    if not args.json:
        from replay_report import write_report

        write_report(results, sweep=args.sweep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
