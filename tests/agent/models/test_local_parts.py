"""The embedded model's parts: one concept per module, each small, every public name
reachable from `nbagent.local`, their one public door (no second gathering module)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import nbagent.agent.models
import nbagent.local as local

MODELS = Path(nbagent.agent.models.__file__).parent
HOMES = {
    "adapt_messages": "_local_messages", "tool_rounds_this_turn": "_local_messages",
    "chat_format_for": "_chat_format", "TOOL_CALLING_FORMAT": "_chat_format",
    "gguf_path": "_gguf", "INSTALL": "_gguf",
    "PromptCounter": "_prompt_counter", "prompt_counter": "_prompt_counter",
    "LocalModel": "_local_model", "REPLY_TOKENS": "_local_model",
    "SUMMARY_TOKENS": "_local_model", "TOOL_ROUNDS": "_local_model",
    "TOOL_ROUNDS_SMALL": "_local_model",
    "LocalServer": "_local_server", "server": "_local_server", "local_model": "_local_server",
    "CACHE_BYTES": "_local_server",
}


@pytest.mark.parametrize("name", sorted(HOMES), ids=str)
def test_each_public_name_lives_in_its_own_concept_and_is_re_exported(name: str) -> None:
    home = importlib.import_module(f"nbagent.agent.models.{HOMES[name]}")
    assert getattr(local, name) is getattr(home, name)


def test_the_facade_exports_exactly_the_names_it_gathers() -> None:
    assert sorted(local.__all__) == sorted(HOMES)
    assert not (MODELS / "_local.py").exists()  # one facade: nbagent.local


@pytest.mark.parametrize("path", sorted(MODELS.glob("*.py")), ids=lambda p: p.name)
def test_no_module_of_the_models_folder_is_over_350_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) < 350


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (8, 4)],
                         ids=["1", "2", "3", "8"])
def test_the_server_leaves_half_the_cores_to_other_work(cores: int, threads: int) -> None:
    from nbagent.agent.models import server_threads

    assert server_threads(cores) == threads
