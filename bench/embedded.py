"""The embedded model as a newcomer meets it, quiet and with one core busy, beside llama.cpp's
own time for the same prompt and tokens — all in one run, into one docs/performance.md
section (`<!-- bench:embedded -->`).

    python bench/embedded.py                 # every part; prints, updates docs/performance.md
    python bench/embedded.py --parts chat --repeat 1 --json --no-write

Parts (`--parts`, comma-separated; default all three; about 40 minutes on 2 cores at
`--repeat 3`): `main_job`, the README's `python -m nbagent.demo` in a fresh process, the
whole command's wall time; `load_ext`, a fresh kernel's `%load_ext nbagent` to the first
`%%chat` reply (its first streamed piece and its end) — both in `embedded_session.py`;
`chat`, one chat request (a ~900-token prompt, up to `--tokens` generated) the real path:
litellm, streamed, to the embedded server (SmolLM2-135M on llama-cpp-python's server, with
the threads `server_threads()` gives it). Beside it, `llama_cpp.Llama` in this process with
the same threads reads the very prompt the server's chat handler rendered and generates as
many tokens; "before" is the server with a thread on every core (the old setting) under the
same load. Every request starts with a fresh nonce, so no prompt cache helps. Each part runs
quiet and with a busy-loop process on one core. The machine may be shared: the load average
at the start is printed and written, and only ratios within one run count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from embedded_session import measure_session, one_core_busy, session_table
from report import write_section

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from nbagent.agent.models._local_server import LocalServer, server_threads  # noqa: E402
from nbagent.local import adapt_messages, gguf_path  # noqa: E402

QUESTION = "Tell me a long story about a data analyst who finds a bug in a sales report."
NOTES = ("Quarterly notes: north grew steadily, south was flat, east peaked in April, west "
         "dipped in March and recovered; revenue is in euros, units are boxes. ")


def messages(nonce: str, prompt_tokens: int) -> list[dict[str, Any]]:
    """A chat of about `prompt_tokens` tokens, its nonce first so no cache is reused."""
    notes = NOTES * max(1, prompt_tokens // 40)
    return [{"role": "system", "content": f"[{nonce}] You are a data analyst. {notes}"},
            {"role": "user", "content": QUESTION}]


def through_server(served: LocalServer, tokens: int, prompt_tokens: int
                   ) -> tuple[float, int, str]:
    """Seconds for one streamed chat request, the tokens it generated, and its prompt."""
    model = served.model(max_tokens=tokens)
    chat = messages(uuid.uuid4().hex[:8], prompt_tokens)
    assert served.counter is not None
    prompt = served.counter.render(adapt_messages(chat), [], None)
    streamed: list[str] = []
    started = time.perf_counter()
    completion = model.complete(chat, [], on_text=streamed.append)
    seconds = time.perf_counter() - started
    text = completion.message.get("content") or ""
    return seconds, served.counter.count_text(text), str(prompt)


def through_llama(llama: Any, prompt: str, tokens: int) -> float:
    """Seconds llama.cpp itself takes to read `prompt` and generate `tokens` tokens."""
    started = time.perf_counter()
    llama.create_completion(prompt, max_tokens=tokens, temperature=0.0, stop=["<|im_end|>"])
    return time.perf_counter() - started


def measure(tokens: int, prompt_tokens: int, repeats: int,
            say: Callable[[str], None]) -> dict[str, Any]:
    import llama_cpp

    threads = server_threads()
    cores = len(os.sched_getaffinity(0))
    llama = llama_cpp.Llama(str(gguf_path()), n_ctx=4096, n_threads=threads,
                            n_threads_batch=threads, verbose=False)
    times: dict[str, list[float]] = {}
    generated: list[int] = []
    with LocalServer(4096) as served, LocalServer(4096, threads=cores) as before:
        through_server(served, 4, 64)  # first request pays one-off costs: not timed
        through_server(before, 4, 64)
        for _ in range(repeats):
            for busy in (False, True):
                load = "busy" if busy else "quiet"
                with one_core_busy(busy):
                    seconds, made, prompt = through_server(served, tokens, prompt_tokens)
                    times.setdefault(f"server {load}", []).append(seconds)
                    generated.append(made)
                    # the same prompt with a new nonce, and as many tokens
                    fresh = prompt.replace(prompt[prompt.index("[") + 1:prompt.index("]")],
                                           uuid.uuid4().hex[:8], 1)
                    times.setdefault(f"llama.cpp {load}", []).append(
                        through_llama(llama, fresh, made))
                    if busy:
                        times.setdefault("before busy", []).append(
                            through_server(before, tokens, prompt_tokens)[0])
                say(f"  {load}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items()
                                              if k.endswith(load)))
    llama.close()
    median = {name: statistics.median(values) for name, values in times.items()}
    return {"cores": cores, "threads": threads, "prompt_tokens": prompt_tokens,
            "generated": statistics.median(generated), "repeats": repeats, "seconds": median,
            "busy_over_quiet": median["server busy"] / median["server quiet"],
            "server_over_llama_busy": median["server busy"] / median["llama.cpp busy"],
            "server_over_llama_quiet": median["server quiet"] / median["llama.cpp quiet"],
            "before_over_now_busy": median["before busy"] / median["server busy"]}


def table(result: dict[str, Any]) -> str:
    s = result["seconds"]
    return (
        f"One chat request to the embedded model: a {result['prompt_tokens']:,}-token prompt "
        f"(about; a fresh nonce each time, so no cache), {result['generated']:.0f} tokens "
        f"generated, streamed through litellm; beside it `llama_cpp.Llama` with the same "
        f"threads on the prompt the server rendered, for as many tokens. "
        f"{result['cores']} cores, the server on {result['threads']} thread(s) "
        f"(`server_threads()`); \"busy\" adds a busy-loop process on one core, \"quiet\" "
        f"does not (other work on the machine runs in both). Median of "
        f"{result['repeats']}.\n\n"
        "| | quiet | one core busy |\n|---|---:|---:|\n"
        f"| embedded server (s) | {s['server quiet']:.1f} | {s['server busy']:.1f} |\n"
        f"| llama.cpp itself (s) | {s['llama.cpp quiet']:.1f} | {s['llama.cpp busy']:.1f} |\n"
        f"| server / llama.cpp | {result['server_over_llama_quiet']:.2f} | "
        f"{result['server_over_llama_busy']:.2f} |\n"
        f"| before: a thread per core (s) | | {s['before busy']:.1f} |\n\n"
        f"Busy / quiet: **{result['busy_over_quiet']:.2f}×** (target ≤ 2); server / llama.cpp "
        f"with a core busy: **{result['server_over_llama_busy']:.2f}×** (target ≤ 1.3); the old "
        f"thread-per-core setting under the same load: "
        f"{result['before_over_now_busy']:.1f}× slower than now.\n")


PARTS = ("chat", "load_ext", "main_job")
TITLE = "The embedded model under load"


def parse_parts(text: str) -> list[str]:
    """`--parts chat,load_ext`: the parts named, in the order given, each once."""
    parts = list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"parts are {', '.join(PARTS)} (got {text!r})")
    return parts


def report(result: dict[str, Any]) -> str:
    """The section's Markdown: what ran and under what load, then each part's table."""
    load = result["load_average"]
    end = result.get("load_average_end")
    at_end = (f", {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f} at the end (this run's own "
              f"load included)" if end else "")
    text = (f"{result['cores']} cores; load average {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f} (1 / 5 / 15 min) at the start{at_end} — on a shared machine "
            f"only ratios within one run count. Parts run: {', '.join(result['parts'])}; "
            f"`--repeat {result['repeats']}`, medians.\n\n")
    if result.get("session") and (session := session_table(result["session"])):
        text += session + "\n"
    if result.get("chat"):
        text += table(result["chat"])
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", type=parse_parts, default=list(PARTS),
                        help=f"comma-separated, of {','.join(PARTS)} (default: all)")
    parser.add_argument("--repeat", "--repeats", dest="repeats", type=int, default=3,
                        help="runs of each part under each load (medians are reported)")
    parser.add_argument("--tokens", type=int, default=100, help="tokens to generate (chat)")
    parser.add_argument("--prompt", type=int, default=900, help="prompt tokens, about (chat)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    cores = len(os.sched_getaffinity(0))
    result: dict[str, Any] = {"cores": cores, "load_average": os.getloadavg(),
                              "parts": args.parts, "repeats": args.repeats}
    say("load average at the start: {:.1f} {:.1f} {:.1f} ({} cores)".format(
        *result["load_average"], cores))
    if "chat" in args.parts:
        result["chat"] = measure(args.tokens, args.prompt, args.repeats, say)
    if set(args.parts) - {"chat"}:
        result["session"] = measure_session(args.parts, args.repeats, say)
    result["load_average_end"] = os.getloadavg()
    print(json.dumps(result, indent=2) if args.json else report(result))
    if not args.no_write:
        write_section("embedded", TITLE, report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
