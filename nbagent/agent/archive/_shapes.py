"""The secret shapes, one table (`SHAPES`): each row a provider's documented format (or a
generic assignment), the pattern that finds candidates and the span that is the secret.
`_redact` applies them; `tests/data/secrets.json` holds examples of every row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

REDACTED = "[redacted]"
Span = tuple[int, int]


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _random_looking(text: str) -> bool:
    """Keys are random: long, letters and digits mixed, a long unbroken alphanumeric run;
    slugs and hyphenated words ("sk-learn-pipeline-2024") are not."""
    runs = re.findall(r"[A-Za-z0-9]+", text)
    return (len(text) >= 16 and _has_digit(text) and any(c.isalpha() for c in text)
            and max((len(run) for run in runs), default=0) >= 10)


def _mixed_case(text: str) -> bool:
    return any(c.isupper() for c in text) and any(c.islower() for c in text)


@dataclass(frozen=True)
class SecretShape:
    """One secret format. `pattern` finds candidates (it opens with a literal where it
    can: that keeps a pass over megabytes of output fast); `span` says which part of a
    match is the secret, or None when the candidate is not one after all. `looks_like`:
    the examples a reader recognises it by (docs/security.md's list of shapes shows them).
    `needs`: strings one of which every match holds, and `needs_folded`: words one of which
    every match holds in some case (looked for in an ASCII text, lowered): a text without
    them is not searched. The rows that open with no literal, or a case-blind one, are the
    slow ones to search, and most texts hold none of their words."""

    name: str
    pattern: re.Pattern[str]
    span: Callable[[re.Match[str]], Span | None]
    looks_like: str
    needs: tuple[str, ...] = ()
    needs_folded: tuple[str, ...] = ()


def _whole(check: Callable[[str], bool] | None = None) -> Callable[[re.Match[str]], Span | None]:
    """The group named "secret" if the pattern has one, else the whole match, when
    `check` accepts it."""

    def span(match: re.Match[str]) -> Span | None:
        group = "secret" if "secret" in match.re.groupindex else 0
        found = match.span(group)
        if found[0] == found[1] or (check is not None and not check(match.group(group))):
            return None
        return found

    return span


def _shape(name: str, pattern: str, span: Callable[[re.Match[str]], Span | None] | None = None,
           flags: int = 0, *, looks_like: str, needs: tuple[str, ...] = (),
           needs_folded: tuple[str, ...] = ()) -> SecretShape:
    return SecretShape(name, re.compile(pattern, flags), span or _whole(), looks_like, needs,
                       needs_folded)


def _no_word_before(width: int) -> str:
    """A lookbehind set after a literal prefix `width` characters long: the prefix does
    not continue a word ("risk-adjusted" holds no "sk-" key, "task-scheduler" neither)."""
    return rf"(?<![A-Za-z0-9_-].{{{width}}})"


# `name = value`, `"name": "value"`, `name: value`, `Name=value;`: a quoted value (with
# escapes) or a bare one, which stops at code punctuation
_ASSIGN = r"""(?![A-Za-z0-9_])["']?[ \t]*(?::(?![=:])|=(?![=>]))[ \t]*"""
_VALUE = (r"""(?:(?P<quote>["'])(?P<quoted>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)"""
          r"""|(?P<bare>[^\s"'<>;&,(){}\[\]\\`]+))""")
_NAME_HEAD = re.compile(r"[A-Za-z0-9_.-]{0,80}\Z")
_SEGMENTS = r"(?:[A-Za-z0-9]+[_.-])*"
PASSWORD_NAME = re.compile(_SEGMENTS + r"[A-Za-z]*(?:password|passwd|pwd)", re.I)
API_NAME = re.compile(
    _SEGMENTS + r"(?:(?:x-)?api[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|client[_-]?secret|"
    r"private[_-]?key|auth[_-]?key|"
    r"(?:access|auth|refresh|api|bearer|session|id)[_-]?token|authorization)", re.I)
_AWS_SECRET_NAME = re.compile(_SEGMENTS + r"(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key", re.I)
PLACEHOLDER = re.compile(r"\{[^{}]*\}|\$\{?[A-Za-z_]\w*\}?|%\([^)]*\)s|<[^<>]*>|\*+|x+|X+|"
                          r"\.+|" + re.escape(REDACTED))
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)*")


def _name(match: re.Match[str]) -> str:
    """The whole name an assignment's keyword ends (`OPENAI_API_KEY` for its `KEY`)."""
    head = _NAME_HEAD.search(match.string, max(0, match.start() - 80), match.start())
    return (head.group() if head else "") + match.group("key")


def _assigned(names: re.Pattern[str], min_length: int) -> Callable[[re.Match[str]], Span | None]:
    """The value of `name = value` when the name is a secret's and the value is one: not a
    placeholder, nor code (`getpass()`, `os.environ[...]`, an identifier, a path)."""

    def span(match: re.Match[str]) -> Span | None:
        if not names.fullmatch(_name(match)):
            return None
        if match.group("quoted") is not None:
            value, found = match.group("quoted"), match.span("quoted")
        else:
            value, found = match.group("bare"), match.span("bare")
            after = match.string[found[1]:found[1] + 1]
            if after in ("(", "[") or value[:1] in ("/", "~", "$"):
                return None  # a call, an index, a path, a reference: not the value itself
            if after not in (";", "&") and _IDENTIFIER_PATH.fullmatch(value):
                return None  # `password=password`, `api_key=config.key`
        if len(value) < min_length or PLACEHOLDER.fullmatch(value):
            return None
        return found

    return span


def _aws_secret(match: re.Match[str]) -> Span | None:
    return match.span("secret") if _AWS_SECRET_NAME.fullmatch(_name(match)) else None


_NL = r"(?:\r?\n|\\n)"  # a line break, or one written as `\n` (an .env file, a JSON dump)
# a key block's body: optional `Name: value` headers, then whole base64 lines (at least
# one of 16 characters or more) and a short last one only right before its END line
_PEM_BODY = (_NL + r"(?:[A-Za-z][A-Za-z0-9-]*:[^\n]*" + _NL + r")*(?:" + _NL + r")?"
             r"(?:[ \t]*[A-Za-z0-9+/]{16,}={0,2}[ \t]*(?:" + _NL + r"|\Z))+"
             r"(?:[ \t]*[A-Za-z0-9+/]{1,15}={0,2}[ \t]*" + _NL + r"(?=-----END))?")
_URL_END = r"""(?=[\s"'<>)\]}`,;]|\Z)"""

SHAPES: tuple[SecretShape, ...] = (
    _shape("OpenAI / Anthropic / OpenRouter key", r"sk-" + _no_word_before(3)
           + r"[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])", _whole(_random_looking),
           looks_like="`sk-…`, `sk-proj-…`, `sk-ant-…`, `sk-or-…`"),
    _shape("AWS access key id", r"A" + _no_word_before(1) + r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])"
           r"[A-Z0-9]{16}(?![A-Za-z0-9])",
           looks_like="`AKIA…`, `ASIA…`"),
    _shape("AWS secret access key", r"(?P<key>(?i:key))" + _ASSIGN
           + r"""["']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", _aws_secret,
           looks_like="`aws_secret_access_key = …` (40 characters)", needs_folded=("key",)),
    _shape("GitHub token", r"g" + _no_word_before(1) + r"(?:h[pousr]_[A-Za-z0-9]{36,255}|"
           r"ithub_pat_[A-Za-z0-9_]{50,255})(?![A-Za-z0-9_])",
           looks_like="`ghp_…`, `gho_…`, `ghu_…`, `ghs_…`, `ghr_…`, `github_pat_…`"),
    _shape("GitLab token", r"glpat-" + _no_word_before(6) + r"[A-Za-z0-9_-]{20,}"
           r"(?![A-Za-z0-9_-])",
           looks_like="`glpat-…`"),
    _shape("Google API key", r"AIza" + _no_word_before(4) + r"[0-9A-Za-z_-]{35}"
           r"(?![A-Za-z0-9_-])",
           looks_like="`AIza…`"),
    _shape("Slack token", r"xox" + _no_word_before(3) + r"[abposr]-[0-9A-Za-z-]{10,}"
           r"(?![A-Za-z0-9_-])", _whole(_has_digit),
           looks_like="`xoxb-…`, `xoxp-…` and kin"),
    _shape("Hugging Face token", r"hf_" + _no_word_before(3) + r"[A-Za-z0-9]{30,}"
           r"(?![A-Za-z0-9_])", _whole(_mixed_case),
           looks_like="`hf_…`"),
    _shape("Stripe key", r"[sr]k_" + _no_word_before(3) + r"(?:live|test)_[0-9A-Za-z]{16,}"
           r"(?![A-Za-z0-9_])",
           looks_like="`sk_live_…`, `rk_live_…`, `sk_test_…`", needs=("k_",)),
    _shape("Groq key", r"gsk_" + _no_word_before(4) + r"[A-Za-z0-9]{40,}(?![A-Za-z0-9_])",
           _whole(_random_looking),
           looks_like="`gsk_…`"),
    _shape("Replicate token", r"r8_" + _no_word_before(3) + r"[A-Za-z0-9]{30,}"
           r"(?![A-Za-z0-9_])", _whole(_random_looking),
           looks_like="`r8_…`"),
    _shape("Perplexity key", r"pplx-" + _no_word_before(5) + r"[A-Za-z0-9]{32,}"
           r"(?![A-Za-z0-9_-])", _whole(_random_looking),
           looks_like="`pplx-…`"),
    _shape("xAI key", r"xai-" + _no_word_before(4) + r"[A-Za-z0-9]{32,}(?![A-Za-z0-9_-])",
           _whole(_random_looking),
           looks_like="`xai-…`"),
    _shape("npm token", r"npm_" + _no_word_before(4) + r"[A-Za-z0-9]{36}(?![A-Za-z0-9_])",
           _whole(_random_looking),
           looks_like="`npm_…`"),
    _shape("PyPI token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}",
           looks_like="`pypi-AgEIcHlwaS5vcmc…`"),
    _shape("SendGrid key", r"SG\." + _no_word_before(3) + r"[A-Za-z0-9_-]{16,32}\."
           r"[A-Za-z0-9_-]{16,64}(?![A-Za-z0-9_-])",
           looks_like="`SG.….…`"),
    _shape("JSON Web Token", r"eyJ" + _no_word_before(3) + r"[A-Za-z0-9_-]{5,}\.eyJ"
           r"[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}=*",
           looks_like="`eyJ….eyJ….…`"),
    _shape("PEM private key", r"-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
           r"(?P<secret>" + _PEM_BODY + ")",
           looks_like="`-----BEGIN … PRIVATE KEY-----` blocks (also written with `\\n` in an "
                      "`.env` file)"),
    _shape("Slack webhook URL", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
           r"(?P<secret>T[A-Z0-9]{6,12}/[A-Z0-9]{6,14}/[A-Za-z0-9/]{16,64})" + _URL_END,
           looks_like="`https://hooks.slack.com/services/T…/B…/…`"),
    _shape("Discord webhook URL", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/"
           r"(?:v\d+/)?webhooks/\d{15,22}/(?P<secret>[A-Za-z0-9_-]{50,80})" + _URL_END,
           looks_like="`https://discord.com/api/webhooks/<id>/…`"),
    _shape("Microsoft Teams webhook URL", r"https://[A-Za-z0-9-]+\.webhook\.office\.com/"
           r"webhookb2/(?P<secret>[0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/[0-9a-f]{32}/"
           r"[0-9a-f-]{36}(?:/[A-Za-z0-9_-]{20,})?)" + _URL_END,
           looks_like="`https://….webhook.office.com/webhookb2/…`"),
    _shape("Stripe webhook secret", r"whsec_" + _no_word_before(6) + r"[A-Za-z0-9]{32,}"
           r"(?![A-Za-z0-9_])", _whole(_random_looking),
           looks_like="`whsec_…`"),
    _shape("Google OAuth client secret", r"GOCSPX-" + _no_word_before(7) + r"[A-Za-z0-9_-]{28}"
           r"(?![A-Za-z0-9_-])",
           looks_like="`GOCSPX-…`"),
    _shape("GitLab token (other kinds)", r"(?<![A-Za-z0-9_-])gl(?:oas|dt|rt|cbt|ptt|ft|imt|"
           r"agent|soat|ffct)-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])", _whole(_random_looking),
           looks_like="`gldt-…`, `glrt-…`, `glptt-…`, `gloas-…` and the other prefixes",
           needs=("gl",)),
    _shape("Databricks token", r"dapi" + _no_word_before(4) + r"[0-9a-f]{32}(?:-\d)?"
           r"(?![A-Za-z0-9])",
           looks_like="`dapi…`"),
    _shape("Shopify token", r"shp(?:at|ss|ca|pa)_" + _no_word_before(6) + r"[a-fA-F0-9]{32}"
           r"(?![A-Za-z0-9])",
           looks_like="`shpat_…`, `shpss_…`, `shpca_…`, `shppa_…`"),
    _shape("DigitalOcean token", r"do[opr]_v1_" + _no_word_before(7) + r"[a-f0-9]{64}"
           r"(?![A-Za-z0-9])",
           looks_like="`dop_v1_…`, `doo_v1_…`, `dor_v1_…`"),
    _shape("Telegram bot token", r"(?<![A-Za-z0-9:])\d{8,10}:(?P<secret>AA[A-Za-z0-9_-]{33})"
           r"(?![A-Za-z0-9_-])",
           looks_like="`123456789:AA…`", needs=(":AA",)),
    _shape("Azure storage account key", r"(?i:AccountKey)=(?P<secret>[A-Za-z0-9+/]{86}==)",
           looks_like="`AccountKey=…` in a connection string", needs_folded=("accountkey=",)),
    _shape("Azure shared access key", r"(?i:SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{42,44}=?)"
           r"(?![A-Za-z0-9+/=])",
           looks_like="Service Bus / Event Hubs `SharedAccessKey=…`",
           needs_folded=("sharedaccesskey=",)),
    _shape("password in a URL", r"""://[^\s:@/?#"'<>\\`]*:(?P<secret>[^\s/?#"'<>\\`]+)@"""
           r"""(?=[^\s/?#"'<>\\`@]+)""", _whole(lambda p: not PLACEHOLDER.fullmatch(p)),
           looks_like="`https://user:pass@host`, `postgresql://user:pw@host`, index URLs"),
    _shape("secret in a URL query", r"[?&](?i:token|access_token|api_key|apikey|key|sig|"
           r"signature|x-amz-signature|x-amz-security-token|auth|code)="
           r"""(?P<secret>[^&#\s"'<>\\`]+)""", _whole(_random_looking),
           looks_like="`?token=…`, `&sig=…` (Azure SAS), `&X-Amz-Signature=…` and similar",
           needs=("=",)),
    _shape("bearer token", r"(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"
           r"(?![A-Za-z0-9._~+/=-])", _whole(lambda t: len(t) >= 16 or _has_digit(t)),
           looks_like="`Authorization: Bearer …`", needs_folded=("bearer",)),
    _shape("basic auth header", r"(?i:authorization)" + _ASSIGN + r"""["']?(?i:basic)[ \t]+"""
           r"(?P<secret>[A-Za-z0-9+/]{8,}=*)",
           looks_like="`Authorization: Basic …`", needs_folded=("authorization",)),
    _shape("password assignment", r"(?P<key>(?i:pass(?:word|wd)|pwd))" + _ASSIGN + _VALUE,
           _assigned(PASSWORD_NAME, 1),
           looks_like="`password=…` / `pwd=…` in connection strings, "
                      "`\"password\": \"…\"`, `PASSWORD=\"…\"`", needs_folded=("pass", "pwd")),
    _shape("API key assignment", r"(?P<key>(?i:key|secret|token|authorization))"
           + _ASSIGN + _VALUE, _assigned(API_NAME, 8),
           looks_like="`api_key = …`, `x-api-key: …`, `secret_key`, `client_secret`, "
                      "`access_token` …", needs_folded=("key", "secret", "token", "authorization")),
)
