"""The embedded model's start: a warm start in the background that the first chat waits
for (one start, never two), a status line saying what it waits for and for how long, and
a failed start reported to the chat that waits, then tried again."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from nbagent import LocalModelError
from nbagent.agent.models import ChatModel, EmbeddedModel
from nbagent.testing import ScriptedModel, reply

STARTING = re.compile(r"starting the local model \(SmolLM2-135M\)… (\d+) s")


class SlowStart(EmbeddedModel):
    """The embedded model whose server start is held until the test releases it."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(2048, 64)
        self.release = threading.Event()
        self.serving = threading.Event()
        self.starts = 0
        self.fail = fail

    def _serve(self) -> ChatModel:
        self.starts += 1
        self.serving.set()
        assert self.release.wait(10)
        if self.fail:
            raise LocalModelError("The embedded model's server exited: out of memory")
        return ScriptedModel([reply("hello"), reply("again")], name="local/smollm2")


def test_a_warm_start_returns_at_once_and_is_idempotent() -> None:
    model = SlowStart()
    assert model.start_in_background() is True
    assert model.serving.wait(5) and model.loading  # the start runs in another thread
    assert model.start_in_background() is False  # the same start, not a second one
    assert model.running is None
    model.release.set()
    assert model.started().name == "local/smollm2"
    assert model.starts == 1 and model.start_in_background() is False


def test_the_first_chat_waits_for_the_warm_start_saying_for_how_long() -> None:
    model = SlowStart()
    statuses: list[str] = []
    model.listen(statuses.append)
    model.start_in_background()
    got: list[Any] = []
    chats = [threading.Thread(target=lambda: got.append(model.started(tick=0.02)))
             for _ in range(2)]  # two requests at once (the chat and a summary)
    for chat in chats:
        chat.start()
    while len(statuses) < 6:
        threading.Event().wait(0.01)
    model.release.set()
    for chat in chats:
        chat.join(5)
    assert len(got) == 2 and got[0] is got[1] and model.starts == 1
    assert statuses and all(STARTING.fullmatch(s) for s in statuses), statuses
    completion = model.complete([{"role": "user", "content": "hi"}], [], on_text=None)
    assert completion.message["content"] == "hello"


def test_a_failed_start_reaches_the_waiting_chat_and_the_next_one_tries_again() -> None:
    model = SlowStart(fail=True)
    model.release.set()
    model.start_in_background()
    with pytest.raises(LocalModelError, match="out of memory"):
        model.started(tick=0.01)
    model.fail = False
    assert model.started(tick=0.01).name == "local/smollm2"
    assert model.starts == 2


def test_a_users_gguf_is_named_in_the_status() -> None:
    assert EmbeddedModel(2048, 64, path="/models/qwen2.5-7b-q4.gguf").label == "qwen2.5-7b-q4"


def test_it_says_its_server_never_cuts_a_prompt_silently() -> None:
    """Like the server's own model (`LocalModel`), before it has started: its server refuses
    an over-long prompt, so a usage that shrinks mid-turn is never taken for a cut."""
    from nbagent.agent import may_cut_silently

    model = EmbeddedModel(2048, 64)
    assert model.cuts_prompts is False and may_cut_silently(model) is False
