"""Which environment variable gives a model its key, for the one-line message a missing
or rejected key gets: named by the provider's own error, else by litellm, else by a small
table of provider prefixes."""

from __future__ import annotations

import os
import re

_KEY_BY_PREFIX = {
    "openai": "OPENAI_API_KEY", "gpt": "OPENAI_API_KEY", "o1": "OPENAI_API_KEY",
    "o3": "OPENAI_API_KEY", "o4": "OPENAI_API_KEY", "chatgpt": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY", "claude": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY", "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
    "azure": "AZURE_API_KEY", "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY", "xai": "XAI_API_KEY", "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "cohere": "COHERE_API_KEY", "perplexity": "PERPLEXITYAI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY", "moonshot": "MOONSHOT_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY", "bedrock": "AWS_ACCESS_KEY_ID",
}  # fmt: skip
_NAMED_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*_(?:API_KEY|AUTH_TOKEN|ACCESS_KEY_ID)\b")


def _variables_from_litellm(model_name: str) -> list[str]:
    from ..models._litellm import litellm  # imported here: slow, and only needed for this hint

    try:
        missing = litellm().validate_environment(model=model_name).get("missing_keys") or []
    except Exception:  # an unknown model, an older litellm: fall back to the table
        return []
    return [str(key) for key in missing]


def auth_hint(model_name: str, error: BaseException | str | None = None) -> str:
    """One line telling the user which environment variable gives `model_name` its key,
    and whether it is unset or was rejected: "OPENAI_API_KEY is not set: ...". Reads the
    variable from the error text when the provider names one, else asks litellm
    (`validate_environment`), else a small table of provider prefixes."""
    named = _NAMED_VARIABLE.findall(str(error)) if error is not None else []
    variables = [v for v in named if not v.endswith("ADMIN_KEY")][:1]
    variables = variables or _variables_from_litellm(model_name)
    if not variables:
        prefix = re.split(r"[/:.-]", model_name.lower(), maxsplit=1)[0]
        variables = [_KEY_BY_PREFIX.get(prefix, "OPENAI_API_KEY")]
    # litellm lists alternatives for some providers (GOOGLE_API_KEY, GEMINI_API_KEY) and
    # joint requirements for others (AZURE_API_BASE, AZURE_API_VERSION, AZURE_API_KEY)
    joiner = " or " if all(v.endswith("_API_KEY") for v in variables) else " and "
    listed = joiner.join(variables)
    if not any(os.environ.get(v) for v in variables) or (
        joiner == " and " and not all(os.environ.get(v) for v in variables)
    ):
        return (
            f"{model_name} has no credentials: {listed} "
            f"{'is' if len(variables) == 1 else 'are'} not set. Set {listed} in the "
            "environment (or pass the key to the model) and run the cell again."
        )
    return (
        f"{model_name} rejected the credentials in {listed}. Check the key (and that it "
        "belongs to this provider), set it again and run the cell again."
    )
