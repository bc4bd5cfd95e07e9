"""Whether a variable's name says its value is a secret, decided by whole name parts:
the name is split on `_`, digits and camelCase (`db_pass` → db, pass; `apiKey` → api,
key; `PASSPHRASE` → passphrase) and hidden when a part is a secret word. Words that
merely contain one (`spin`, `keyboard`, `monkey`, `tokenizer`) are not secret, nor
plurals that name collections in data work (`keys`, `tokens`).
"""

from __future__ import annotations

import re

SECRET_PARTS = frozenset({
    "pass", "passwd", "password", "passwords", "pwd", "pw", "passphrase", "passcode", "pin",
    "secret", "secrets", "token", "key", "apikey", "credential", "credentials", "cred",
    "creds", "auth", "authorization", "cookie", "cookies", "otp", "privkey", "signature",
    "bearer", "jwt", "dsn",
})
# runs of capitals (an acronym, or a whole upper-case word), capitalised words, lower words
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z]+|[a-z]+")


def name_parts(name: str) -> list[str]:
    """The words of a name, lower-cased: `smtpPW2` → smtp, pw; `APIKey` → api, key."""
    return [part.lower() for part in _PART.findall(name)]


def is_secret_name(name: str) -> bool:
    """True when one of the name's words is a secret word (`db_pass`, `smtp_pw`,
    `apiKey`, `PASSPHRASE`, `user_pin`), not for `spin`, `keyboard` or `pinned_rows`."""
    return any(part in SECRET_PARTS for part in name_parts(name))
