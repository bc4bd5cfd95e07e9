"""What a chat turn costs the kernel, side by side in one run: nbagent's `%%chat` beside plain
litellm and Jupyter AI's `%%ai` magics, each in a real IPython kernel of its own, on one stub
OpenAI server on 127.0.0.1 (its own process), the same questions for `--turns` turns.

Per turn: the kernel's CPU (its own process, all threads; the stub's is not counted), and the
client's overhead in wall time: the turn's wall time (execute request to idle, as the
notebook sees it) less the time the stub spent answering that turn's requests. At the end:
the kernel's resident memory. The stub streams each reply as `--events` events of 5
characters when asked to stream, and reports prompt tokens as o200k_base counts them.

Clients (`clients`): nbagent's `%%chat` with the defaults a user gets (archive, built-in
tools, notebook context, the streamed reply shown as Markdown), its model and server set in
the environment; plain litellm keeping the whole history, unstreamed (and streamed with
`--litellm-stream`), the reply printed; Jupyter AI's magics when `--jupyter-ai PYTHON`
names an interpreter that has them and ipykernel: v2's `jupyter-ai-magics` (its `%%ai`,
LangChain under it) or v3's `jupyter-ai-magic-commands` (litellm under it). Each kernel
runs its cells as JupyterLab does (the request names its cell), one kernel at a time.

Jupyter AI goes in virtualenvs of its own (its dependencies are not nbagent's):
    python -m venv /tmp/jai2 && /tmp/jai2/bin/pip install jupyter-ai-magics \
        "langchain-core<0.4" "langchain-openai<0.4" ipykernel
    python -m venv /tmp/jai3 && /tmp/jai3/bin/pip install jupyter-ai-magic-commands ipykernel

    python bench/turn_overhead.py --jupyter-ai /tmp/jai2/bin/python \
        --jupyter-ai /tmp/jai3/bin/python        # 300 turns; updates docs/performance.md
    python bench/turn_overhead.py --json > run.json   # measure, print only; then
    python bench/turn_overhead.py --from-json run.json   # its table to docs/performance.md
    python bench/turn_overhead.py --serve 480    # only the stub
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "bench"))
SENTENCE = "The mean of the column is 4.2 and the median 3.9; "


def serve(events: int) -> None:
    """The stub: every chat request gets the same reply of `events` pieces, as JSON or as
    server-sent events; `GET /stats` gives each request's start and end (time.time())."""
    import corpora

    encoding = corpora.o200k()
    text = (SENTENCE * (events * 5 // len(SENTENCE) + 1))[: events * 5]
    completion = len(encoding.encode_ordinary(text))
    served: list[tuple[float, float]] = []

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

        def do_GET(self) -> None:  # noqa: N802
            if self.path.endswith("/stats"):
                self.send(200, "application/json", json.dumps(served).encode())
                return
            self.send(404, "application/json", b'{"error": "not here"}')

        def do_POST(self) -> None:  # noqa: N802
            start = time.time()
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/chat/completions"):
                self.send(404, "application/json", b'{"error": "not here"}')
                return
            prompt = sum(4 + len(encoding.encode_ordinary(json.dumps(m.get("content") or "")))
                         for m in body["messages"])
            prompt += len(encoding.encode_ordinary(json.dumps(body.get("tools") or [])))
            usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion}
            head = {"id": "chatcmpl-bench", "created": 0, "model": body["model"]}
            if not body.get("stream"):
                message = {"role": "assistant", "content": text}
                data = json.dumps({**head, "object": "chat.completion", "usage": usage,
                                   "choices": [{"index": 0, "message": message,
                                                "finish_reason": "stop"}]}).encode()
                self.send(200, "application/json", data)
            else:
                head["object"] = "chat.completion.chunk"
                deltas = [{"role": "assistant", "content": ""}]
                deltas += [{"content": text[i: i + 5]} for i in range(0, len(text), 5)]
                chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                          for d in deltas]
                chunks.append({**head, "choices": [{"index": 0, "delta": {},
                                                    "finish_reason": "stop"}]})
                chunks.append({**head, "choices": [], "usage": usage})
                data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
                self.send(200, "text/event-stream", data + b"data: [DONE]\n\n")
            served.append((start, time.time()))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextmanager
def stub(events: int) -> Iterator[str]:
    """The stub in a child process of its own session; yields its base URL."""
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(events)],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert child.stdout is not None
        yield f"http://127.0.0.1:{int(child.stdout.readline())}/v1"
    finally:
        child.kill()
        child.wait()


def stub_times(base_url: str) -> list[tuple[float, float]]:
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/stats", timeout=10) as answer:
        return [tuple(pair) for pair in json.loads(answer.read())]  # type: ignore[misc]


# The CPU of each cell, taken in the kernel (psutil's process times tick every 10 ms): the
# process's time (all threads) from IPython's pre_run_cell to its post_run_cell event.
TIMER = """
import time as _bench_time
_bench_cpu = []
def _bench_pre(info):
    _bench_cpu.append(-_bench_time.process_time())
def _bench_post(result):
    if _bench_cpu and _bench_cpu[-1] < 0:
        _bench_cpu[-1] += _bench_time.process_time()
get_ipython().events.register("pre_run_cell", _bench_pre)
get_ipython().events.register("post_run_cell", _bench_post)
"""
# Each client: the setup cell and one turn's cell ({base}: the stub's URL, {i}: the turn).
# nbagent as a user with an OpenAI-compatible server sets it up: the model and the server
# in the environment (NBAGENT_MODEL; litellm reads OPENAI_API_BASE), then the extension
NBAGENT_SETUP = "%load_ext nbagent"
OPENAI_ENV = {"OPENAI_API_KEY": "sk-bench", "OPENAI_API_BASE": "{base}",
              "OPENAI_BASE_URL": "{base}"}
LITELLM_SETUP = """
import os
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
history = [{"role": "system", "content": "You are a data analyst's assistant."}]

def ask(question, stream):
    history.append({"role": "user", "content": question})
    kwargs = dict(model="openai/bench-model", api_base="{base}", api_key="sk-bench",
                  messages=history)
    if stream:
        pieces = [c.choices[0].delta.content or "" for c in
                  litellm.completion(**kwargs, stream=True) if c.choices]
        text = "".join(pieces)
    else:
        text = litellm.completion(**kwargs).choices[0].message.content
    history.append({"role": "assistant", "content": text})
    print(text)
"""
QUESTION = "Question {i}: what is the mean of col_{i} in df, and is it skewed?"


@dataclass(frozen=True)
class Client:
    name: str
    setup: str
    turn: str
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)


def clients(jupyter_ai: list[str], litellm_stream: bool = False) -> list[Client]:
    found = [
        Client("nbagent `%%chat` (streamed)", NBAGENT_SETUP, "%%chat\n" + QUESTION,
               env={**OPENAI_ENV, "NBAGENT_MODEL": "openai/bench-model"}),
        Client("plain litellm, unstreamed", LITELLM_SETUP, f'ask("{QUESTION}", stream=False)'),
    ]
    if litellm_stream:  # its stream wrapper: ~0.5 s of CPU a reply (bench/turn_cost.py)
        found.append(Client("plain litellm, streamed", LITELLM_SETUP,
                            f'ask("{QUESTION}", stream=True)'))
    for python in jupyter_ai:
        version = subprocess.run(
            [python, "-c", "import importlib.metadata as m\nfor d in ('jupyter-ai-magics', "
             "'jupyter-ai-magic-commands'):\n    try: print(d, m.version(d)); break\n"
             "    except m.PackageNotFoundError: pass"],
            capture_output=True, text=True).stdout.split()
        if not version:
            print(f"{python}: no Jupyter AI magics there", file=sys.stderr)
            continue
        if version[0] == "jupyter-ai-magics":  # v2: LangChain's ChatOpenAI under %%ai
            found.append(Client(
                f"Jupyter AI {version[1]} `%%ai`", "%load_ext jupyter_ai_magics",
                "%%ai openai-chat:gpt-4o-mini\n" + QUESTION, python, OPENAI_ENV))
        else:
            found.append(Client(
                f"Jupyter AI magic commands {version[1]} `%%ai`",
                "%load_ext jupyter_ai_magic_commands",
                "%%ai openai/gpt-4o-mini --api-base {base}\n" + QUESTION, python, OPENAI_ENV))
    return found


@dataclass
class Run:
    cpu_ms: list[float] = field(default_factory=list)
    overhead_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    requests: int = 0
    rss_start_mb: float = 0.0
    rss_end_mb: float = 0.0
    errors: list[str] = field(default_factory=list)


def run_client(client: Client, base_url: str, turns: int, folder: Path) -> Run:
    """One kernel: the setup cell, a first turn (not counted), then `turns` turns."""
    import psutil
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    name = f"bench{abs(hash(client.name))}"
    spec = folder / "kernels" / name
    spec.mkdir(parents=True)
    env = {k: v.replace("{base}", base_url) for k, v in client.env.items()}
    env.update(NBAGENT_DATA_DIR=str(folder / "data"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [client.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": client.name, "language": "python", "env": env}))
    manager = KernelManager(kernel_name=name, kernel_spec_manager=KernelSpecManager(
        kernel_dirs=[str(folder / "kernels")]))
    manager.start_kernel(cwd=str(folder))
    kernel = manager.client()
    kernel.start_channels()
    run = Run()
    try:
        kernel.wait_for_ready(timeout=120)
        process = psutil.Process(manager.provisioner.pid)  # type: ignore[union-attr]

        def execute(code: str) -> None:
            for message in notebook_execute(kernel, code):
                if message["msg_type"] == "error":
                    run.errors.append(message["content"]["ename"] + ": "
                                      + message["content"]["evalue"][:200])

        execute(client.setup.replace("{base}", base_url))
        turn = client.turn.replace("{base}", base_url)
        execute(turn.replace("{i}", "0"))
        run.rss_start_mb = process.memory_info().rss / 2**20
        execute(TIMER)
        for i in range(1, turns + 1):
            before = stub_times(base_url)
            start = time.perf_counter()
            execute(turn.replace("{i}", str(i)))
            wall = time.perf_counter() - start
            served = stub_times(base_url)[len(before):]
            run.requests += len(served)
            stub_s = sum(end - begin for begin, end in served)
            run.wall_ms.append(wall * 1000)
            run.overhead_ms.append((wall - stub_s) * 1000)
        run.rss_end_mb = process.memory_info().rss / 2**20
        run.cpu_ms = [s * 1000 for s in kernel_value(kernel, "_bench_cpu")[:turns]]
    finally:
        kernel.stop_channels()
        manager.shutdown_kernel(now=True)
    return run


def notebook_execute(kernel: Any, code: str, timeout: float = 300) -> list[dict[str, Any]]:
    """Run `code` as JupyterLab runs a cell (the request names its cell, so a client shows
    its outputs as a notebook does, updated in place); the cell's output messages, once the
    kernel is idle again."""
    import uuid

    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    request = kernel.session.msg("execute_request", content,
                                 metadata={"cellId": str(uuid.uuid4())})
    kernel.shell_channel.send(request)
    outputs: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        message = kernel.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if message["parent_header"].get("msg_id") != request["header"]["msg_id"]:
            continue
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
        outputs.append(message)
    while kernel.get_shell_msg(timeout=timeout)["parent_header"].get("msg_id") != \
            request["header"]["msg_id"]:
        pass
    return outputs


def kernel_value(kernel: Any, name: str) -> Any:
    """A JSON value the kernel holds, read from its printed output."""
    printed = [m["content"]["text"] for m in notebook_execute(
        kernel, f"import json as _j; print(_j.dumps({name}))", timeout=60)
        if m["msg_type"] == "stream"]
    return json.loads("".join(printed))


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))] if ordered else float("nan")


def measure(events: int, turns: int, jupyter_ai: list[str], only: str = "",
            litellm_stream: bool = False) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with stub(events) as base_url, tempfile.TemporaryDirectory() as folder:
        # one at a time (two kernels at once would share the cores), each on its own folder
        for client in clients(jupyter_ai, litellm_stream):
            if only not in client.name:
                continue
            run = run_client(client, base_url, turns, Path(folder) / str(len(results)))
            results[client.name] = run.__dict__
            print(f"{client.name}: {statistics.median(run.cpu_ms):.1f} ms CPU a turn, "
                  f"{run.rss_end_mb:.0f} MB; {len(run.errors)} errors {run.errors[:2]}",
                  file=sys.stderr)
    return {"events": events, "turns": turns, "runs": results}


def table(result: dict[str, Any]) -> str:
    runs = result["runs"]
    lines = ["| client | kernel CPU a turn (median / p90) | overhead a turn (median / p90) "
             "| requests | kernel memory after setup → last turn |",
             "|---|---:|---:|---:|---:|"]
    for name, run in runs.items():
        note = f" ({len(run['errors'])} turns failed)" if run["errors"] else ""
        lines.append(
            f"| {name}{note} | {statistics.median(run['cpu_ms']):.1f} / "
            f"{quantile(run['cpu_ms'], 0.9):.1f} ms | {statistics.median(run['overhead_ms']):.1f}"
            f" / {quantile(run['overhead_ms'], 0.9):.1f} ms | {run['requests']} | "
            f"{run['rss_start_mb']:.0f} → {run['rss_end_mb']:.0f} MB |")
    ours = runs[next(iter(runs))]
    peers = {name: run for name, run in runs.items() if not name.startswith("nbagent")
             and not run["errors"]}
    lightest = min(peers, key=lambda name: statistics.median(peers[name]["cpu_ms"]))
    ratio_cpu = statistics.median(ours["cpu_ms"]) / statistics.median(peers[lightest]["cpu_ms"])
    ratio_over = (statistics.median(ours["overhead_ms"])
                  / statistics.median(peers[lightest]["overhead_ms"]))
    return "\n".join(lines) + (
        f"\n\n{result['turns']} turns after a first one, the same questions to every client, "
        f"one kernel at a time on one stub (replies of {result['events'] * 5:,} characters, "
        f"{result['events']} events when streamed); the overhead is the turn's wall time "
        "less the stub's time answering it. nbagent over the lightest peer "
        f"({lightest}): **{ratio_cpu:.2f}×** in kernel CPU, **{ratio_over:.2f}×** in "
        "overhead (target ≤ 2×); kernel memory after the last turn "
        f"**{ours['rss_end_mb']:.0f} MB** (target ≤ 250 MB).\n\n" + WHERE_IT_GOES)


# What profiles of nbagent's kernel (cProfile on process time, py-spy) showed, kept beside
# the figures: what was cut, and what is left.
WHERE_IT_GOES = (
    "Where a turn's CPU went, and what was cut: reading the ~480 events (httpx-sse "
    'decoded each line in Python; now split with bytes methods, a batch parsed at once), '
    'the settings read from the environment ~18 times a turn (a failed lookup per field; '
    "now one pass over the names), the archive's secret snapshot per record (each name's "
    'verdict now kept) and a whole-history re-estimate on every count (`_as_sent` '
    "compared with a fresh copy), the cache plan's digest of every message per request "
    '(now of the new ones); then the window and settings climbed for ~31 and ~55 times a '
    'turn (now one snapshot a turn), three walks of the history a turn looking for '
    'figures a model cannot read (now a count the history keeps) and the cache plan '
    'classifying every message (now only the preamble and blocks). Then '
    "`litellm.completion`'s per-call wrapper, about half of a turn: it set up a logging "
    'object, copied every message twice more (a thought-signature pass, a re-validation) '
    'and priced the stream wrapper before reading it, counting the whole history with '
    "tiktoken's cl100k_base. A streamed chat to litellm's OpenAI handler (OpenAI, an "
    "OpenAI-compatible server) now has its body built by litellm's own pieces — its "
    "message check, its parameter mapping, the provider's `transform_request` — and "
    'posted with the openai SDK as litellm posts it (`models/_direct`; a test compares '
    "the body with litellm.completion's for each provider); other providers, litellm "
    'callbacks and options it does not map still go through `litellm.completion`. Then '
    "(py-spy, and each function's CPU in the kernel at turns 150-300): a stream's last "
    "batch was parsed twice (its `[DONE]` failed the batch's one `json.loads`, which then"
    ' parsed it event by event; now left out of it), the openai SDK encoded the whole '
    "body for each request (~1.2 ms at 300 messages; the last request's messages are now "
    'kept encoded by their fields and the body is the same bytes, a test compares them '
    "with litellm.completion's), and a new cell's exchange listed every round of the "
    "history looking for an earlier one of its key (now only a re-run cell's does). What "
    'is left: reading the ~480 events (~1.8 ms, their JSON ~1 ms) and handing each piece '
    'on to the display (~1 ms), six display messages a turn (the meter at the start, '
    "after the request and after the reply, the status line, the reply's first and last "
    "draw: ~0.45 ms each with ipykernel's two stream flushes, where Jupyter AI sends "
    "one), the archive's redaction (37 secret shapes over every string a turn records; "
    'the nine that open with no literal, or a case-blind one, were most of it and now '
    "pass over a text holding none of their words: the reply's 0.46 → 0.08 ms), litellm's"
    ' message check and transformation of the whole history (~0.7 ms at 300 messages), '
    'and compactions (the requests beyond one a turn are their summaries). Memory: '
    'litellm itself (~185 MB in a kernel: `import litellm` loads ~3,000 modules, and this'
    " version offers no lighter import); tiktoken's cl100k_base is no longer loaded (the "
    'stream was its only user). Beside litellm (measured cell by cell in a kernel that '
    'imported it first), the load adds ~8.5 MB — Markdown (markdown-it, ~1 MB), the '
    "sanitizer (nh3, ~1.5 MB), tenacity (~0.4 MB), nbagent's engine (~1.2 MB), agent "
    '(~3.4 MB) and notebook modules (~0.9 MB) — and the first chat ~4.7 MB, most of it '
    "the openai SDK's HTTP client (~2.4 MB); plain litellm's first `completion` adds ~13 "
    'MB to its import. Cut: the interactive meter (`ContextMeter`) loaded anywidget and '
    "ipywidgets (~3.5 MB) with the magics, though a chat cell's meter is a plain line; it"
    ' is now loaded by `%nbagent meter` only (a 300-turn kernel: after the first turn 249'
    ' → 243 MB, after the last 256 → 249-252 MB in three runs; run to run the same build '
    "differs by up to 3 MB). The SDK's client made an SSL context of its own, loading the"
    " certificates a second time (~0.5 MB); it now connects on litellm's (and so on "
    "litellm's SSL settings, as litellm.completion does). The growth over the turns (+47 "
    "MB by turn 300) was the request bodies: the openai SDK's stream object holds itself "
    "through its event generator (a reference cycle) and the request's options, so each "
    "turn's body and its copy of the history lived until Python's next full collection, "
    'dozens of turns later (tracemalloc: ~20 MB of them live at turn 200, each up to ~750'
    " KB), and glibc's heap kept the holes they left; the stream read now holds only the "
    'HTTP response, freed when the reply is read (not threads: the kernel runs the same '
    "13 at turn 1 and 300, and MALLOC_ARENA_MAX=2 changed nothing). A compaction's "
    'summary went through `litellm.completion`, whose first call loaded ~90 more modules '
    'and its logging thread (+10 MB); it now takes the direct path in one piece. What is '
    'left: the growth between compactions, ~17 KB a turn of resident memory for ~4 KB of '
    'live Python objects (the history; tracemalloc), the rest holes in the heap (plain '
    'litellm grows as much: +7 MB by turn 300), and ~3 MB at the first compaction. That '
    "one is not litellm's provider-config table (built for the summary's request to "
    'gpt-4o-mini: 22 modules, 0.3 MB; built early, the kernel ends the same): the '
    "compaction's transient work (the summary prompt of the whole history, two summaries "
    "in one piece, the floor) peaks ~1.9 MB of Python objects above the turn's start, and"
    " the kernel keeps what the allocator took for it — the summary thread's malloc arena"
    ' (~0.6 MB), a new 1 MB pymalloc arena and more heap (/proc smaps: +3 MB anonymous; '
    "MALLOC_ARENA_MAX=1 kept 0.4 MB of it). Not done: fixing glibc's mmap threshold at "
    "128 KB (mallopt) kept ~5 MB more of the heap's holes away, but made a user's "
    'temporaries of 1 MB ten times slower in the same process (5,000 numpy `a * 2 + 1`: '
    '0.3 → 3.3 s of CPU; a pandas groupby loop +25-55%); malloc_trim after turn 300 gave '
    'back 2 MB for ~1 ms a call. With no model set, `%load_ext nbagent` also starts the '
    'embedded model (llama.cpp and its tokenizer in the kernel, ~50 MB): here the model '
    'is set first.')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--events", type=int, default=480)
    parser.add_argument("--jupyter-ai", action="append", default=[], metavar="PYTHON",
                        help="an interpreter with Jupyter AI's magics and ipykernel")
    parser.add_argument("--serve", type=int, metavar="EVENTS", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", default="", help="the clients whose name has this")
    parser.add_argument("--litellm-stream", action="store_true",
                        help="also plain litellm streamed (slow: its stream wrapper)")
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="write the table of a run saved with --json; measure nothing")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.from_json:
        result = json.loads(args.from_json.read_text(encoding="utf-8"))
    else:
        result = measure(args.events, args.turns, args.jupyter_ai, args.only,
                         args.litellm_stream)
    if args.json:
        print(json.dumps(result))
        return 0
    body = table(result)
    print(body)
    from report import write_section

    write_section("turn_overhead", "A turn in the kernel: nbagent beside litellm and Jupyter AI",
                  body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
