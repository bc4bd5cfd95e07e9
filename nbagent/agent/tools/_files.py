"""What the model's file tools may read: files under the working directory and the folders
the user adds (`NBAGENT_READ_ROOTS`), never a well-known secret file, whatever the path's
spelling (`..`, absolute, a symbolic link out). A refusal is a one-line result the model
can read, not an exception. `read_text_page` is the `read_file` tool's body.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence
from pathlib import Path

MAX_PAGE_LINES = 500
_BINARY_SNIFF = 8_192

# Secret files: by name wherever they are, by name pattern, and by the place they sit.
_SECRET_NAMES = frozenset({
    ".env", ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".my.cnf",
    ".s3cfg", ".boto", ".htpasswd", "credentials.json", "credentials.db", "access_tokens.db",
    "application_default_credentials.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
    "id_ecdsa_sk", "id_ed25519_sk", "master.key", "secrets.toml",
})
_SECRET_PATTERNS = (".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
                    "*.keychain", "*.keychain-db", "*.kdbx", "*.ppk", "service-account*.json",
                    "*-credentials.json", "*.tfstate")
_SECRET_PLACES = ("*/.ssh/*", "*/.gnupg/*", "*/.aws/*", "*/.azure/*", "*/.docker/config.json",
                  "*/.kube/config", "*/library/keychains/*", "*/.password-store/*",
                  "*/.config/gcloud/*", "*/.config/gh/hosts.yml", "*/huggingface/token",
                  "*/.huggingface/token", "/etc/shadow*", "/etc/gshadow*", "/etc/sudoers*",
                  "/etc/ssl/private/*", "/proc/*/environ", "/proc/*/mem")
_SAFE_NAMES = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")


def secret_file_reason(path: Path) -> str | None:
    """Why `path` is a well-known secret file, or None when it is not one."""
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _SAFE_NAMES):
        return None
    if name in _SECRET_NAMES or any(fnmatch.fnmatchcase(name, p) for p in _SECRET_PATTERNS):
        return f"{path.name} holds keys or credentials"
    where = path.as_posix().lower()
    place = next((p for p in _SECRET_PLACES if fnmatch.fnmatchcase(where, p)), None)
    if place is not None:
        return f"{place.strip('*/')} holds keys or credentials"
    return None


def read_roots() -> list[Path]:
    """The folders the file tools may read: the working directory and NBAGENT_READ_ROOTS."""
    from .._settings import Settings

    roots = [Path.cwd()]
    configured = Settings.from_env().read_roots or ""
    roots += [Path(part).expanduser() for part in configured.split(os.pathsep) if part.strip()]
    return roots


def check_readable(path: str, roots: Sequence[Path] | None = None) -> tuple[Path | None, str]:
    """(the resolved file, "") when the file tools may read `path`, else (None, the
    one-line reason the model is given)."""
    allowed = [Path(root).expanduser().resolve() for root in
               (read_roots() if roots is None else roots)]
    given = Path(path).expanduser()
    try:
        resolved = (given if given.is_absolute() else Path.cwd() / given).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop, a path too long
        return None, f"Cannot read {path}: {error}"
    for candidate in (given, resolved):
        reason = secret_file_reason(candidate)
        if reason is not None:
            return None, (f"Refused: {path} is a secret file ({reason}); the file tools never "
                          "read keys or credentials.")
    if not any(resolved == root or resolved.is_relative_to(root) for root in allowed):
        shown = ", ".join(str(root) for root in allowed)
        return None, (f"Refused: {path} is outside the folders the file tools may read "
                      f"({shown}); the user can add a folder to NBAGENT_READ_ROOTS.")
    return resolved, ""


def read_text_page(path: str, offset: int = 0, limit: int = 200, *,
                   roots: Sequence[Path] | None = None) -> str:
    """A page of a text file's lines with a header saying where it is in the file, or a
    one-line refusal or error. Bytes that are not UTF-8 are shown as \\xNN escapes."""
    resolved, refusal = check_readable(path, roots)
    if resolved is None:
        return refusal
    try:
        status = os.stat(resolved)
    except FileNotFoundError:
        return f"No file {path}."
    except OSError as error:
        return f"Cannot read {path}: {error.strerror or error}"
    if stat.S_ISDIR(status.st_mode):
        return f"{path} is a folder, not a file."
    if not stat.S_ISREG(status.st_mode):
        return f"Refused: {path} is not a regular file."
    offset = max(0, offset)
    limit = max(1, min(limit, MAX_PAGE_LINES))
    page: list[str] = []
    total = 0
    try:
        with open(resolved, "rb") as handle:
            if b"\x00" in handle.read(_BINARY_SNIFF):
                return (f"{path} is a binary file ({status.st_size:,} bytes), not text; load it "
                        "with the library for its format instead.")
            handle.seek(0)
            for total, raw in enumerate(handle, 1):  # noqa: B007 -- total counts the lines
                if offset < total <= offset + limit:
                    page.append(raw.rstrip(b"\r\n").decode("utf-8", errors="backslashreplace"))
    except OSError as error:
        return f"Cannot read {path}: {error.strerror or error}"
    end = offset + len(page)
    more = f"; next offset {end}" if end < total else "; end of file"
    return f"[lines {offset}–{end} of {total}{more}]\n" + "\n".join(page)
