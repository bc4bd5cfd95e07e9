"""Every exception and warning nbagent raises, in one tree. What a provider's error means
(overflow, rate limit, auth, ...) is read next to the model seam, in
`agent/providers/_errors.py`; it becomes a `ModelCallError` here.

    NbagentError                    base of every error nbagent raises on purpose
    ├── HistoryError (ValueError)   a message list that breaks the chat-format rules;
    │                               carries the offending message's `index`
    ├── ModelCallError              a model call failed for good; carries `kind`
    │                               ("overflow", "auth", "quota", "rate_limit", ...)
    ├── CompactionFailed            a compaction level produced nothing valid (the
    │                               controller catches it; the history is untouched)
    ├── ArchiveError                a session archive that cannot be used or resumed
    ├── LocalModelError             the embedded model could not be started
    ├── BusyError                   a chat or a session already in use elsewhere
    ├── McpConfigError (ValueError) an MCP server spec or config file that cannot be used
    ├── McpToolError                an MCP tool call that gave no result (the model reads
    │                               the message as the tool's answer)
    └── Unreadable                  a file `read_file` cannot read (the model reads why)

    NbagentWarning (UserWarning)
    └── ConfigWarning               an environment variable with a bad value, ignored

Signals that are not errors a caller meets are not part of the tree: a probe's
`Unreachable`, the approval's `NoOneToAsk` and `Interrupted` (a question cancelled: it
becomes a refusal), a tool's `HandOver` (the work passes to the user; the loop ends the
turn), an MCP sign-in address refused inside the SDK
(`SignInRefused`: the server's start fails with a line saying why), the scripted fake's
`ProviderError`.
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

    `kind` is the provider error's kind ("overflow", "auth", "quota",
    "request_too_large", "rate_limit", "transient", "other") or "blocked" when
    the context passed its blocking limit. The history stays valid and nothing
    is lost when this is raised.
    """

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class CompactionFailed(NbagentError):
    """A compaction level could not produce a valid result (the summarizer failed or
    wrote junk). Carries the summarizer calls spent, for the decision record."""

    def __init__(self, reason: str, *, summary_calls: int = 0, cost: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.summary_calls = summary_calls
        self.cost = cost


class ArchiveError(NbagentError):
    """A session archive that cannot be used: a bad session id, an unreadable or
    tampered file, a session another agent is writing."""


class LocalModelError(NbagentError):
    """The embedded model could not be started (missing extra, no GGUF, server died)."""


class BusyError(NbagentError):
    """The agent is already running a chat (one turn at a time)."""


class McpConfigError(NbagentError, ValueError):
    """A server spec or a config file that cannot be used; the message says which and why."""


class McpToolError(NbagentError):
    """An MCP tool call that did not give a result: the server reported an error, or it
    could not be reached. The message is what the model reads."""


class Unreadable(NbagentError):
    """Why a file cannot be read, as the one line the model is given."""


class NbagentWarning(UserWarning):
    """Base class of nbagent's warnings."""


class ConfigWarning(NbagentWarning):
    """A setting (usually an environment variable) had a bad value and was ignored."""
