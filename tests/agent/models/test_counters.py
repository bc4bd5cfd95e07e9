"""`counter_for` (`_counters`): which offline tokenizer counts a model's text — OpenAI's
models their tiktoken encoding, DeepSeek's litellm's bundled tokenizer, others none (and a
model on a local server none: that server counts) — never downloading, loaded on first count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent.agent.models import counter_for

TEXT = "Describe the revenue column of sales_df.\n\n    df.describe()  # 12,345 rows, 你好 😀"


def tiktoken_encoding(name: str) -> Any:
    import tiktoken

    return tiktoken.get_encoding(name)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("openai/gpt-4o-mini", "o200k_base"),
        ("azure/gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("openai/o3-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("openrouter/openai/gpt-oss-120b", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:acme::x1", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("openai/gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_openai_models_count_with_their_tiktoken_encoding(model: str, encoding: str) -> None:
    count = counter_for(model)
    assert count is not None
    assert count(TEXT) == len(tiktoken_encoding(encoding).encode_ordinary(TEXT))
    assert count("") == 0


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5",  # litellm's bundled Claude tokenizer predates Claude 3
        "anthropic/claude-opus-4-1",
        "gemini/gemini-2.5-pro",
        "mistral/mistral-large-latest",
        "groq/llama-3.3-70b-versatile",  # litellm would download Llama's tokenizer
        "together_ai/deepseek-ai/DeepSeek-R1-Distill-Llama-70B",  # a Llama model
        "ollama/deepseek-r1:7b",  # a local build: whatever that runtime serves
        "ollama/gpt-oss:20b",
        "openai/smollm2",
    ],
)
def test_models_without_an_offline_tokenizer_get_none(model: str) -> None:
    assert counter_for(model) is None


def test_a_model_on_a_local_server_is_counted_by_that_server_not_by_its_name() -> None:
    assert counter_for("openai/gpt-4o", api_base="http://127.0.0.1:8080/v1") is None
    assert counter_for("openai/gpt-4o", api_base="https://proxy.example.com/v1") is not None


@pytest.mark.parametrize("model", ["deepseek/deepseek-chat", "deepseek-reasoner"])
def test_deepseek_counts_like_litellms_bundled_tokenizer(model: str) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    count = counter_for(model)
    assert count is not None
    assert count(TEXT) == litellm.token_counter(model=model, text=TEXT, count_response_tokens=True)
    r1 = counter_for("openrouter/deepseek/deepseek-r1")  # the reasoner, by its model name
    assert r1 is not None and r1(TEXT) == count(TEXT)


def test_no_tiktoken_file_means_no_counter_rather_than_a_download(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert counter_for("gpt-4o") is None
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's "no cache": it would download
    assert counter_for("gpt-4o") is None


def test_tokenizers_load_on_the_first_count_not_on_import() -> None:
    code = (
        "import sys, nbagent, nbagent.agent.models._counters as c\n"
        "loaded = lambda: [m for m in ('tiktoken', 'tokenizers', 'litellm') if m in sys.modules]\n"
        "print(loaded())\n"
        "gpt, deepseek = c.counter_for('gpt-4o'), c.counter_for('deepseek/deepseek-chat')\n"
        "print(loaded())\n"
        "gpt('hi'), deepseek('hi')\n"
        "print(loaded())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[]", "[]", "['tiktoken', 'tokenizers']"]
