"""The one `Settings` users see: the engine's part (`EngineSettings`: window overrides,
thresholds, the ladder's sizes) plus what the agent reads — the models, the embedded
model, the data folder, tools, timeouts, the notebook context. Same `NBAGENT_*`
variables, same validation; every module of the agent room takes its settings from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from ..engine._settings import ENV_PREFIX, EngineSettings
from .mcp._config import MCP_CONFIG_SHAPE
from .providers._caching import prompt_caching_words

__all__ = ["ENV_PREFIX", "EngineSettings", "Settings"]


class Settings(EngineSettings):
    """nbagent's configuration. Each field is read from `NBAGENT_<FIELD NAME>`."""

    model: str | None = Field(None, description="Chat model, in litellm's naming.")
    compact_model: str | None = Field(
        None, description="Model that writes summaries; defaults to the chat model."
    )
    delegate_model: str | None = Field(
        None, description="Model that works on the tasks the chat model delegates (the "
        "delegate tool), in its own context window; defaults to the chat model. A cheaper "
        "model fits reading and summarising."
    )
    delegate_max_chars: PositiveInt = Field(
        4_000, description="A delegated task's report longer than this (at a 200K window, "
        "scaled down) is cut before it enters the conversation; the archive keeps it whole."
    )
    data_dir: str | None = Field(
        None, description="Where session archives go (default $XDG_DATA_HOME/nbagent when "
        "that is an absolute path, else ~/.local/share/nbagent)."
    )
    describe_max_chars: PositiveInt = Field(
        4_000, description="The describe_variable tool's answer (a table's dtypes, head and "
        "statistics, another value's repr) is cut at this many characters."
    )
    local_model_path: str | None = Field(
        None, description="A GGUF file to run on the embedded server instead of SmolLM2-135M."
    )
    local_max_tokens: PositiveInt = Field(
        512, description="The embedded model's maximum reply length, in tokens."
    )
    read_roots: str | None = Field(
        None,
        description="Folders (separated by os.pathsep) the file tools may read besides the "
        "working directory.",
    )
    local_n_ctx: PositiveInt = Field(
        8192, description="The embedded local model's context window (its server's n_ctx)."
    )
    tool_output_max_chars: PositiveInt = Field(
        16_000,
        description="A tool result longer than this (at a 200K window, scaled down) is cut to "
        "its head and tail on arrival; the model can read the rest back.",
    )
    max_tool_rounds: PositiveInt = Field(
        25, description="A chat stops after this many rounds of tool calls."
    )
    max_chat_seconds: float = Field(
        600.0, gt=0, description="A chat stops after this many seconds (checked between rounds)."
    )
    summary_timeout_s: float = Field(
        120.0, gt=0, description="A summary (memory or full) not written within this many "
        "seconds fails that compaction; the history stays as it was."
    )
    tool_timeout_s: float = Field(
        300.0, gt=0, description="A tool still running after this many seconds is abandoned."
    )
    notebook_context: bool = Field(
        True, description="Give the model a short, bounded account of the notebook's state "
        "(your variables, as list_variables lists them), so it knows your data without a "
        "tool call: a note in the conversation each time it changed (at a provider that "
        "caches prompts), or on each request."
    )
    enable_python: bool = Field(
        False, description="Offer the model the older python tool (runs code in your "
        "namespace invisibly, returning what it printed); run_code replaces it."
    )
    run_code: Literal["ask", "auto", "off"] = Field(
        "ask", description="Code the model runs (the run_code tool), shown with its outputs in "
        "the chat cell: `ask` shows it first and waits for you (run it, or take it as a cell "
        "below), `auto` runs it at once, `off` never runs it."
    )
    see_cells: bool = Field(
        True, description="Tell the model about the cells you ran since its last turn (their "
        "code, a bounded excerpt of their outputs, their errors) with your next message."
    )
    prompt_caching: bool = Field(True, description=prompt_caching_words())

    @property
    def runs_code(self) -> bool:
        """Whether the run_code tool is offered (`run_code` is not off)."""
        return self.run_code != "off"
    mcp_config: str | None = Field(
        None, description=f"{MCP_CONFIG_SHAPE[0].upper()}{MCP_CONFIG_SHAPE[1:]}, as other MCP "
        "clients write: those servers' tools are offered to the model."
    )
    mcp_timeout_s: float = Field(
        60.0, gt=0, description="An MCP tool call still running after this many seconds "
        "counts as hung: its server is stopped and started again on the next call."
    )
