"""`Billing`: what a chat session's model requests were billed, by kind of token — input
at the full rate, cache reads and cache writes at their own rates, output — and what that
cost (litellm's prices, or the model's own: `LiteLLMModel.prices`). The loop adds every chat
request's usage to the session's own record.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine._usage import Usage


@dataclass
class Billing:
    """Token usage and cost of a session's chat requests (summaries are in decisions).

    `input_tokens` are billed at the input rate (the cached parts excluded);
    `cache_read_tokens` and `cache_write_tokens` at the provider's cache rates.
    `input_cost` is the prompt side (input + cache reads + cache writes), `cost` all.
    """

    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    input_cost: float = 0.0
    output_cost: float = 0.0

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token sent, however billed."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_read_share(self) -> float:
        """The share of prompt tokens read from the provider's cache (0 with none sent)."""
        total = self.prompt_tokens
        return self.cache_read_tokens / total if total else 0.0

    @property
    def cost(self) -> float:
        return self.input_cost + self.output_cost

    def add(self, usage: Usage | None, *, cost: float | None = None,
            input_cost: float | None = None) -> None:
        """Count one request: its usage, and its cost (`input_cost` the prompt side; when
        only the total is known, all of it counts as input)."""
        self.requests += 1
        if usage is not None:
            self.input_tokens += usage.input_tokens
            self.cache_read_tokens += usage.cache_read_tokens
            self.cache_write_tokens += usage.cache_write_tokens
            self.output_tokens += usage.output_tokens
        total = cost or 0.0
        prompt = input_cost if input_cost is not None else total
        self.input_cost += prompt
        self.output_cost += max(0.0, total - prompt)

    def absorb(self, other: Billing) -> None:
        """Count every request `other` counted (a delegated task's, into its session's)."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.output_tokens += other.output_tokens
        self.input_cost += other.input_cost
        self.output_cost += other.output_cost
