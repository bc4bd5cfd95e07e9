"""Figures the model's code makes reach a model that reads images as image parts (issue 33
item 1): one user message right after the round's tool results, bounded in count and
size, counted by their pixel size, cleared by L1 once old, archived and resumed
with the base64 whole, untouched by redaction; a model that reads no images never gets
one. The scripted model drives the turn; a real matplotlib figure is the PNG."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, Settings
from nbagent.agent import sees_images
from nbagent.agent.archive import Redactor
from nbagent.agent.models import LOCAL_MODEL
from nbagent.agent.tools import (
    MAX_IMAGE_CHARS,
    MAX_IMAGES,
    Figure,
    attach_png,
    images_message,
    take_figures,
    without_images,
)
from nbagent.code import use_code_runner
from nbagent.engine import (
    IMAGE_TOKENS,
    IMAGES_CLEARED,
    estimate_message_tokens,
    image_tokens,
    is_images,
    is_plain_user,
)
from nbagent.engine.compaction import snip_old_tools
from nbagent.events import EventStream
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.figures import PLOT, VISION, FigureRunner, plotting_turn


def png_of(points: list[float], dpi: int = 40) -> bytes:
    """A real PNG: a matplotlib figure drawn by the Agg canvas (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    figure = MplFigure(figsize=(4, 3), dpi=dpi)
    figure.add_subplot().plot(points)
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def figure_runner() -> Any:
    previous = use_code_runner(FigureRunner())
    yield
    use_code_runner(previous)


def image_urls(messages: list[dict[str, Any]]) -> list[str]:
    return [part["image_url"]["url"] for m in messages if isinstance(m.get("content"), list)
            for part in m["content"] if part.get("type") == "image_url"]


def test_a_vision_model_gets_the_figure_as_an_image_right_after_the_tool_results() -> None:
    agent, model = plotting_turn(VISION)
    roles = [m["role"] for m in agent.history]
    assert roles[-4:] == ["assistant", "tool", "user", "assistant"]
    figures = agent.history[-2]
    assert is_images(figures) and not is_plain_user(figures)
    assert "agent run 1, figure 1" in figures["content"][0]["text"]
    (url,) = image_urls(model.requests[1])  # the request after the round carries it
    assert url.startswith("data:image/png;base64,iVBORw0KGgo")
    assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # the tool result keeps the text form (the description) whatever the model reads
    tool_result = next(m for m in agent.history if m["role"] == "tool")
    assert "a line plot with 3 points" in tool_result["content"]


@pytest.mark.parametrize("name", ["scripted/model", LOCAL_MODEL, "gpt-3.5-turbo"],
                         ids=["unknown", "embedded", "text-only"])
def test_a_model_that_reads_no_images_gets_none(name: str) -> None:
    agent, model = plotting_turn(name)
    assert not any(is_images(m) for m in agent.history)
    assert image_urls([m for request in model.requests for m in request]) == []
    tool_result = next(m for m in agent.history if m["role"] == "tool")
    assert "a line plot with 3 points" in tool_result["content"]


def test_the_capability_is_the_models_own_else_litellms() -> None:
    assert sees_images(ScriptedModel(name=VISION))
    assert sees_images(ScriptedModel(name="anthropic/claude-sonnet-4-5"))
    assert not sees_images(ScriptedModel(name="scripted/model"))

    class Says(ScriptedModel):
        accepts_images = False

    assert not sees_images(Says(name=VISION))  # the model object's word wins


def test_a_round_sends_at_most_its_bound_and_names_what_it_left_out() -> None:
    small = base64.b64encode(png_of([1, 2])).decode()
    big = "iVBORw0KGgo" + "A" * MAX_IMAGE_CHARS
    figures = [Figure(small, f"figure {n}") for n in range(1, MAX_IMAGES + 2)]
    message = images_message([Figure(big, "huge"), *figures])
    assert message is not None
    parts = message["content"]
    assert sum(p["type"] == "image_url" for p in parts) == MAX_IMAGES
    header = parts[0]["text"]
    assert "huge: not sent (too large" in header
    assert f"figure {MAX_IMAGES + 1}: not sent (at most {MAX_IMAGES}" in header
    assert images_message([]) is None
    assert images_message([Figure(big, "huge")]) is None  # nothing left to send


def test_only_pngs_are_attached_and_a_take_empties_the_round() -> None:
    events = EventStream()
    assert not attach_png(events, "not base64 at all!", "x")
    assert not attach_png(events, base64.b64encode(b"GIF89a....").decode(), "gif")
    assert attach_png(events, base64.b64encode(png_of([1, 2])).decode(), "one line")
    with_breaks = base64.encodebytes(png_of([2, 1])).decode()  # line breaks every 76
    assert attach_png(events, with_breaks, "wrapped")
    taken = take_figures(events)
    assert [f.name for f in taken] == ["one line", "wrapped"]
    assert "\n" not in taken[1].png and take_figures(events) == []


def png_figure(size: tuple[float, float], dpi: int = 100, points: int = 3) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    figure = MplFigure(figsize=size, dpi=dpi)
    figure.add_subplot().plot([(i * 7919) % 101 for i in range(points)])
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return Figure(base64.b64encode(buffer.getvalue()).decode(), "a")


def test_an_image_counts_by_its_size_not_its_base64_length() -> None:
    plain = images_message([png_figure((6.4, 4.8), points=3)])
    busy = images_message([png_figure((6.4, 4.8), points=3_000)])
    assert plain is not None and busy is not None
    assert len(json.dumps(busy)) > len(json.dumps(plain)) + 5_000
    assert estimate_message_tokens(plain) == estimate_message_tokens(busy)
    large = images_message([png_figure((20, 15))])
    assert large is not None
    assert estimate_message_tokens(plain) < estimate_message_tokens(large) < 2_000
    # no PNG header to read: the fixed estimate
    unknown = {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}
    assert image_tokens(unknown) == IMAGE_TOKENS


@pytest.mark.parametrize("size", [(4, 3), (6.4, 4.8), (10, 6), (20, 15)], ids=str)
def test_an_images_estimate_is_near_litellms_count(size: tuple[float, float]) -> None:
    from nbagent.agent.models import litellm

    figure = png_figure(size)
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{figure.png}"}}
    theirs = litellm().token_counter(model=VISION, messages=[{"role": "user",
                                                              "content": [part]}])
    # litellm counts as OpenAI charges; Anthropic charges up to 1,600 for a large image
    assert 0.5 * theirs <= image_tokens(part) <= max(2 * theirs, 1_600)


def test_l1_clears_old_rounds_figures_and_keeps_the_recent_ones() -> None:
    agent, _ = plotting_turn(VISION, runs=3)
    for _ in range(3):  # three more turns make the plotting turn old
        agent.model.steps.append(reply("ok"))  # type: ignore[attr-defined]
        agent.chat("and?")
    messages = agent.history.messages
    assert len(agent.history.rounds()) == 4  # a figures message starts no round
    assert sum(is_images(m) for m in messages) == 3
    kept = snip_old_tools(messages, keep_recent_turns=8)
    assert not kept.changed or all(m["content"] != IMAGES_CLEARED for m in kept)
    result = snip_old_tools(messages, keep_recent_turns=1)
    assert result.changed and "3 old rounds' figures" in result.reason
    cleared = [m for m in result if is_images(m)]
    assert [m["content"] for m in cleared] == [IMAGES_CLEARED] * 3
    assert image_urls(list(result)) == []
    again = snip_old_tools(list(result), keep_recent_turns=1)
    assert not again.changed  # idempotent: a cleared message stays as it is


def test_a_model_switched_to_one_without_images_gets_their_cleared_text() -> None:
    agent, _ = plotting_turn(VISION)
    text_only = ScriptedModel([reply("fine")], name="scripted/model")
    agent.model = text_only
    agent.chat("what did it show?")
    (request,) = text_only.requests
    assert image_urls(request) == [] and IMAGES_CLEARED in json.dumps(request)
    assert image_urls(agent.history.messages)  # the history keeps them
    assert without_images(request) is request  # nothing left to clear: the same list


def test_the_archive_keeps_the_figure_whole_and_a_resumed_session_has_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, _ = plotting_turn(VISION, data=tmp_path)
    (url,) = image_urls(agent.history.messages)
    # a secret environment value that happens to be a span of the image's data: the
    # data is not a key, whatever it spells (redaction keeps it whole)
    data = url.split(",", 1)[1]
    monkeypatch.setenv("OPENAI_API_KEY", data[200:240])
    assert Redactor().value(agent.history[-2]) == agent.history[-2]
    archive = agent.session.archive
    assert archive is not None
    agent.close()
    raw = Path(archive.path).read_text(encoding="utf-8")
    assert data in raw
    resumed = Agent.resume(archive.path, model=ScriptedModel([reply("seen")], name=VISION),
                           namespace={})
    assert image_urls(resumed.history.messages) == [url]
    resumed.chat("again?")
    assert image_urls(resumed.model.requests[0]) == [url]  # type: ignore[attr-defined]
    resumed.close()


def test_a_summary_request_names_the_figures_without_their_data() -> None:
    from nbagent.testing import ScriptedSummarizer

    summarize = ScriptedSummarizer(default="## 1. Primary Request and Intent\nplot it")
    model = ScriptedModel([calls(("run_code", {"code": PLOT, "explanation": "plot"})),
                           reply("plotted"), reply("ok"), reply("ok")], name=VISION)
    agent = Agent(model=model, namespace={}, summarize=summarize,
                  settings=Settings(run_code="auto"))
    for text in ("plot it", "and?", "so?"):
        agent.chat(text)
    agent.compact()
    assert summarize.requests
    sent = json.dumps(summarize.requests)
    assert "base64" not in sent and "iVBORw0KGgo" not in sent
    assert "[image_url]" in sent  # the transcript says a figure was there
