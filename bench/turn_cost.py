"""What a chat turn costs the client: CPU per turn, nbagent's own beside the provider
library's (litellm, and the openai SDK and httpx under it), for the same reply streamed and
unstreamed, against a stub OpenAI server on 127.0.0.1 in a process of its own (so its CPU
is not counted). A reply is `--chunks` text pieces of 5 characters (480: ~2,400 characters).

Rows: litellm alone (the request as any client sends it; streamed through litellm's stream
wrapper and `stream_chunk_builder`, as nbagent read streams before); nbagent's model call
(`LiteLLMModel.send`); a whole turn (`Agent.chat`, no tools, a fresh session each time).
The turn's split into nbagent / litellm / the rest is cProfile's own-time by file, applied
to the unprofiled figure.

    python bench/turn_cost.py              # prints a table, updates docs/performance.md
    python bench/turn_cost.py --serve 400  # only the stub (prints its port), for the tests
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SENTENCE = "The mean of the column is 4.2 and the median 3.9; "


def reply_text(chunks: int) -> str:
    return (SENTENCE * (chunks * 5 // len(SENTENCE) + 1))[: chunks * 5]


def serve(chunks: int) -> None:
    """The stub: every chat request gets the same reply, as JSON or as `chunks` events."""
    text = reply_text(chunks)
    usage = {"prompt_tokens": 60, "completion_tokens": chunks, "total_tokens": 60 + chunks}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 -- a local server's self-description: none
            self.send(404, "application/json", b'{"error": "not here"}')

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/chat/completions"):
                self.do_GET()
                return
            head = {"id": "chatcmpl-bench", "created": 0, "model": body["model"]}
            if not body.get("stream"):
                message = {"role": "assistant", "content": text}
                self.send(200, "application/json", json.dumps({
                    **head, "object": "chat.completion", "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }).encode())
                return
            head["object"] = "chat.completion.chunk"
            deltas = [{"role": "assistant", "content": ""}]
            deltas += [{"content": text[i: i + 5]} for i in range(0, len(text), 5)]
            events = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                      for d in deltas]
            events.append({**head, "choices": [{"index": 0, "delta": {},
                                                "finish_reason": "stop"}]})
            events.append({**head, "choices": [], "usage": usage})
            data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
            self.send(200, "text/event-stream", data + b"data: [DONE]\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextmanager
def stub(chunks: int) -> Iterator[str]:
    """The stub in a child process; yields its base URL."""
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(chunks)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield f"http://127.0.0.1:{int(child.stdout.readline())}/v1"
    finally:
        child.kill()
        child.wait()


def cpu_ms(call: Callable[[], object], runs: int) -> float:
    """CPU of this process per call (background threads included), after two warm-ups."""
    call()
    call()
    times = []
    for _ in range(runs):
        start = time.process_time()
        call()
        time.sleep(0.02)  # a logging thread the call queued finishes inside the window
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def calls(base_url: str) -> dict[str, Callable[[], object]]:
    """Each way of getting the reply, by row name."""
    import nbagent
    from nbagent.agent.models._litellm import litellm

    module = litellm()
    request: dict[str, Any] = {"model": "openai/bench", "api_base": base_url, "api_key": "x",
                               "messages": [{"role": "user", "content": "Describe df."}]}
    model = nbagent.LiteLLMModel("openai/bench", api_base=base_url, api_key="x")
    agent = nbagent.Agent(model=model, builtin_tools=False, archive=False, namespace={},
                          settings={"notebook_context": False})
    pieces: list[str] = []

    def wrapper() -> object:
        stream = module.completion(**request, stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        return module.stream_chunk_builder(chunks, messages=request["messages"])

    def turn(on_text: Callable[[str], None] | None) -> object:
        agent.new_session(archive=False)
        return agent.chat("Describe df.", on_text=on_text)

    return {
        "litellm alone, unstreamed": lambda: module.completion(**request),
        "litellm alone, streamed (its wrapper)": wrapper,
        "nbagent model call, unstreamed": lambda: model.send(request["messages"], [],
                                                             on_text=None),
        "nbagent model call, streamed": lambda: model.send(request["messages"], [],
                                                           on_text=pieces.append),
        "nbagent turn, unstreamed": lambda: turn(None),
        "nbagent turn, streamed": lambda: turn(pieces.append),
    }


def split(call: Callable[[], object], runs: int = 5) -> dict[str, float]:
    """Shares of own time by where the function lives: nbagent, litellm, the rest."""
    profile = cProfile.Profile()
    profile.runcall(lambda: [call() for _ in range(runs)])
    shares = {"nbagent": 0.0, "litellm": 0.0, "rest": 0.0}
    stats: Any = pstats.Stats(profile).stats
    for (filename, _, _), (_, _, own, _, _) in stats.items():
        where = ("nbagent" if f"{os.sep}nbagent{os.sep}" in filename else
                 "litellm" if f"{os.sep}litellm{os.sep}" in filename else "rest")
        shares[where] += own
    total = sum(shares.values()) or 1.0
    return {key: value / total for key, value in shares.items()}


def measure(chunks: int, runs: int) -> dict[str, Any]:
    with stub(chunks) as base_url:
        ways = calls(base_url)
        figures = {name: cpu_ms(call, runs) for name, call in ways.items()}
        shares = {name: split(ways[name]) for name in ways if name.startswith("nbagent turn")}
    return {"chunks": chunks, "runs": runs, "cpu_ms": figures, "turn_shares": shares}


def table(result: dict[str, Any]) -> str:
    figures = result["cpu_ms"]
    lines = ["| way | CPU per reply | of which nbagent | litellm | the rest (openai SDK, httpx, "
             "pydantic, stdlib) |", "|---|---:|---:|---:|---:|"]
    for name, ms in figures.items():
        share = result["turn_shares"].get(name)
        parts = (f"{ms * share['nbagent']:.1f} ms | {ms * share['litellm']:.1f} ms | "
                 f"{ms * share['rest']:.1f} ms" if share else "| |")
        lines.append(f"| {name} | {ms:.1f} ms | {parts} |")
    streamed = figures["nbagent model call, streamed"]
    plain = figures["nbagent model call, unstreamed"]
    wrapper = figures["litellm alone, streamed (its wrapper)"]
    alone = figures["litellm alone, unstreamed"]
    return "\n".join(lines) + (
        f"\n\nA reply of {result['chunks']} streamed pieces (~{result['chunks'] * 5:,} "
        f"characters); median of {result['runs']} calls each, process CPU (the stub runs in "
        "its own process).\n\n"
        f"Streamed / unstreamed, nbagent's model call: **{streamed / plain:.2f}** (target ≤ 1.3 "
        "on replies of several hundred events; `tests/agent/models/test_stream.py` checks it "
        f"stays under 2.5 within one run). Through litellm's "
        f"stream wrapper, as before: {wrapper / alone:.1f}. Where the wrapper's time goes "
        "(cProfile): the openai SDK's pydantic object per event, litellm's own chunk object "
        "and a logging task queued per event, and the reply assembled twice at the end "
        "(once for litellm's logging, once by `stream_chunk_builder`). nbagent now reads an "
        "OpenAI-format stream's events itself (`agent/models/_stream.py`: the events that "
        "arrived together split with bytes methods and parsed in one `json.loads`); other "
        "providers' streams, and every stream while the user has litellm callbacks "
        "registered (so they still see it), go through the wrapper. Not in these figures: the "
        "notebook's display of each piece (widgets/), which this bench does not measure.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=480)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--serve", type=int, metavar="CHUNKS", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    result = measure(args.chunks, args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    body = table(result)
    print(body)
    from report import write_section

    write_section("turn_cost", "CPU per chat turn: nbagent beside litellm, streamed and not",
                  body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
