"""What the tools' tests share: the built-in tools over a namespace, by name (`tools`), the
small table the notebook-listing tests look at (`sales`), and the dtype pandas gives a
column of text (`TEXT`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nbagent.agent.tools import OutputStore, Tool, notebook_tools

TEXT = str(pd.Series(["a"]).dtype)  # "object" before pandas 3, "str" since


def sales() -> pd.DataFrame:
    return pd.DataFrame({"city": ["Oslo", "Lima"], "month": [1, 2], "sales": [3.5, 4.0],
                         "visitors": [10, 20]})


def tools(namespace: dict[str, Any], **options: Any) -> dict[str, Tool]:
    return {t.name: t for t in notebook_tools(namespace, OutputStore(), **options)}
