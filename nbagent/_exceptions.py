"""The exceptions and warnings nbagent raises. Classification of provider errors
(overflow, rate limit, ...) lives with the agent, not here.

    NbagentError
    ├── HistoryError        a message list that breaks the chat-format rules
    │                       (carries the offending message index)
    └── ModelCallError      a model call failed for good (overflow after recovery,
                            auth, rate limit after retries, other); carries `kind`

    NbagentWarning (UserWarning)
    └── ConfigWarning       an environment variable with a bad value, ignored
"""

from __future__ import annotations


class NbagentError(Exception):
    """Base class of every error nbagent raises on purpose."""


class HistoryError(NbagentError, ValueError):
    """A message (or message list) that is not a valid OpenAI-format chat history.

    `index` is the position of the offending message in the history it was
    checked against (or would have been appended to).
    """

    def __init__(self, index: int, problem: str) -> None:
        self.index = index
        self.problem = problem
        super().__init__(f"message {index}: {problem}")


class ModelCallError(NbagentError):
    """A model call that could not be completed; the message says what to do.

    `kind` is "overflow", "rate_limit", "auth" or "other". The history keeps
    every message: nothing is lost when this is raised.
    """

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class NbagentWarning(UserWarning):
    """Base class of nbagent's warnings."""


class ConfigWarning(NbagentWarning):
    """A setting (usually an environment variable) had a bad value and was ignored."""
