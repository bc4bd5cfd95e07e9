"""The main job, headless: `python -m nbagent.demo [--window 2048] [--offline]`. The
script lives in the agent room; this module runs it."""

from __future__ import annotations

from .agent._demo import (
    FOCUS,
    NOTES,
    QUESTIONS,
    SYSTEM,
    describe,
    describe_decision,
    main,
    make_agent,
    progress,
    run,
    sales_tools,
)

__all__ = [
    "FOCUS",
    "NOTES",
    "QUESTIONS",
    "SYSTEM",
    "describe",
    "describe_decision",
    "main",
    "make_agent",
    "progress",
    "run",
    "sales_tools",
]

if __name__ == "__main__":
    raise SystemExit(main())
