"""Which files the model's file tools may read: files under the working directory and
the folders the user adds (`NBAGENT_READ_ROOTS`), never a protected one wherever the
working directory is — well-known credential files and histories, dot-files and
dot-folders under the home directory, Jupyter's runtime and config folders (server
tokens, kernel keys), nbagent's own data folders (other sessions' archives: the one the
session's `data_dir` setting names, and the environment's or default one) and the
system's device and process folders. Roots are of two kinds: implicit ones (the working
directory) are readable with every protected place in them still refused; explicit ones
(the user's list) opt back in what lies inside them when the root itself sits in (or is)
the protected place. The decision is made on the path's real location (links resolved);
`_files` then opens exactly that location without following any link.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Secret files: by name wherever they are, by name pattern, and by the place they sit.
# docs/security.md lists every entry of these tables, printed by tests/docs_blocks.py.
_SECRET_NAMES = frozenset({
    ".env", ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".my.cnf",
    ".s3cfg", ".boto", ".htpasswd", "credentials.json", "credentials.db", "access_tokens.db",
    "application_default_credentials.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
    "id_ecdsa_sk", "id_ed25519_sk", "master.key", "secrets.toml", ".yarnrc.yml",
    ".dockercfg", ".vault-token", ".terraformrc", "credentials.tfrc.json", "history.sqlite",
    "fish_history", ".rhistory", "authinfo", ".authinfo", ".authinfo.gpg",
})
_SECRET_PATTERNS = (".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
                    "*.keychain", "*.keychain-db", "*.kdbx", "*.ppk", "*.ovpn",
                    "service-account*.json",
                    "*-credentials.json", "*.tfstate", ".*_history", ".*history", ".histfile",
                    "jpserver-*.json", "jpserver-*.html", "nbserver-*.json", "kernel-*.json")
_SECRET_PLACES = ("*/.ssh/*", "*/.gnupg/*", "*/.aws/*", "*/.azure/*", "*/.docker/config.json",
                  "*/.kube/config", "*/.kube/*", "*/library/keychains/*", "*/.password-store/*",
                  "*/.config/gcloud/*", "*/gcloud/credentials*", "*/.config/gh/hosts.yml",
                  "*/huggingface/token", "*/.huggingface/token", "*/.databrickscfg",
                  "*/.config/rclone/*", "*/.local/share/keyrings/*", "*/.mozilla/*",
                  "*/.config/google-chrome/*", "*/.config/chromium/*", "/etc/shadow*",
                  "/etc/gshadow*", "/etc/sudoers*", "/etc/ssl/private/*", "/proc/*/environ",
                  "/proc/*/mem")
_SYSTEM_FOLDERS = ("/proc", "/sys", "/dev", "/run")  # devices, processes, sockets
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
        # the place as written, less its wildcards: ".ssh", "/etc/ssl/private" (an absolute
        # place keeps its leading "/")
        return f"{place.removeprefix('*/').rstrip('*/')} holds keys or credentials"
    return None


@dataclass(frozen=True)
class Protected:
    """A place the file tools refuse by default: `anchor` is the file or folder that
    makes a path protected (a root at or inside it opts the path back in)."""

    anchor: Path
    reason: str


def _real(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return path.expanduser().absolute()


def _jupyter_folders() -> list[Path]:
    """Jupyter's runtime (server and kernel connection files, with their tokens), config
    and data folders, as jupyter_core names them, their environment variables, and the
    defaults when jupyter_core is not installed."""
    found = [os.environ.get(name, "") for name in
             ("JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR")]
    try:
        from jupyter_core import paths

        found += [paths.jupyter_runtime_dir(), paths.jupyter_config_dir(),
                  paths.jupyter_data_dir()]
    except Exception:  # not installed, or an unreadable configuration
        found += ["~/.jupyter", "~/.local/share/jupyter", "~/Library/Jupyter"]
    return [_real(Path(folder)) for folder in found if folder.strip()]


def _data_folders(more: Sequence[Path] = ()) -> list[Path]:
    """nbagent's data folders, real: `more` (a session's own, from its `data_dir` setting)
    and the environment's (NBAGENT_DATA_DIR) or the default one, which an earlier session
    may have filled even when this one writes elsewhere."""
    from ..archive._archive import data_dir

    found: list[Path] = []
    for folder in [*more, data_dir()]:
        if _real(Path(folder)) not in found:
            found.append(_real(Path(folder)))
    return found


def protections(resolved: Path, data_folders: Sequence[Path] = ()) -> list[Protected]:
    """Every reason the real path `resolved` is protected (empty when it is not);
    `data_folders` are more of nbagent's data folders (see `check_readable`)."""
    found: list[Protected] = []
    reason = secret_file_reason(resolved)
    if reason is not None:
        found.append(Protected(resolved, f"it is a secret file ({reason})"))
    home = _real(Path.home())
    if home != Path(home.anchor) and resolved.is_relative_to(home) and resolved != home:
        parts = resolved.relative_to(home).parts
        hidden = next((i for i, part in enumerate(parts) if part.startswith(".")), None)
        if hidden is not None:
            anchor = home.joinpath(*parts[: hidden + 1])
            found.append(Protected(anchor, f"it is hidden in the home folder ({anchor.name} "
                                           "holds settings and tokens)"))
    for folder in _jupyter_folders():
        if resolved == folder or resolved.is_relative_to(folder):
            found.append(Protected(folder, "it is in Jupyter's own folder (server tokens and "
                                           "kernel keys)"))
    for folder in map(Path, _SYSTEM_FOLDERS):
        if resolved.is_relative_to(folder):
            found.append(Protected(folder, f"it is in {folder}, the system's devices and "
                                           "processes, not files"))
    for data in _data_folders(data_folders):
        if resolved == data or resolved.is_relative_to(data):
            found.append(Protected(data, "it is in nbagent's data folder (session archives)"))
    return found


def implicit_roots() -> list[Path]:
    """The folders the file tools read without the user listing them: the working
    directory. A protected place in one stays refused."""
    return [Path.cwd()]


def explicit_roots() -> list[Path]:
    """The folders (or files) the user listed in NBAGENT_READ_ROOTS: each opts back in
    the protected places it sits in (see `check_readable`)."""
    from .._settings import Settings

    configured = Settings.from_env().read_roots or ""
    return [Path(part).expanduser() for part in configured.split(os.pathsep) if part.strip()]


def read_roots() -> list[Path]:
    """The folders the file tools may read: the working directory and NBAGENT_READ_ROOTS."""
    return [*implicit_roots(), *explicit_roots()]


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def check_readable(path: str, roots: Sequence[Path] | None = None, *,
                   extra_implicit: Sequence[Path] = (),
                   data_folders: Sequence[Path] = ()) -> tuple[Path | None, str]:
    """(the file's real path, "") when the file tools may read `path`, else (None, the
    one-line reason the model is given). A relative `path` starts in the working directory.

    Args:
        path: the path as the model wrote it.
        roots: the EXPLICIT roots; None: NBAGENT_READ_ROOTS (`explicit_roots()`). An
            explicit root opts protected places back in: a protected folder it sits in (or
            is) becomes readable below it — `~/.config/myapp` lets its dot-files be read,
            a root inside nbagent's data folder its archives — and a credential file when
            the file itself is listed. Given, `roots` replaces NBAGENT_READ_ROOTS *and* the
            working directory. Never pass a folder here to mean "this one too": it would
            drop the working directory and open what is protected inside that folder.
        extra_implicit: more IMPLICIT roots, readable as the working directory is (which
            `implicit_roots()` gives, unless `roots` replaces it): every protected place
            inside them — hidden home files, credential files, Jupyter's and nbagent's
            folders — stays refused. This is the parameter for "this folder too".
        data_folders: more of nbagent's data folders to refuse as the environment's is:
            the session's own (`data_dir(settings.data_dir)`, as `read_file` passes it),
            which may sit inside the working directory. The environment's (or the default)
            folder is refused whatever is passed.
    """
    chosen = [*explicit_roots()] if roots is None else list(roots)
    explicit = [_real(Path(root)) for root in chosen]
    implicit = [_real(Path(root)) for root in
                [*(implicit_roots() if roots is None else []), *extra_implicit]]
    allowed = [*implicit, *explicit]
    given = Path(path).expanduser()
    try:
        resolved = (given if given.is_absolute() else Path.cwd() / given).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop, a path too long
        return None, f"Cannot read {path}: {error}"
    named = secret_file_reason(given)  # a secret's own name, even through a link
    if named is not None and _real(given) not in explicit:
        return None, (f"Refused: {path} is a secret file ({named}); the file tools never "
                      "read keys or credentials.")
    if not any(_within(resolved, root) for root in allowed):
        shown = ", ".join(str(root) for root in allowed)
        return None, (f"Refused: {path} is outside the folders the file tools may read "
                      f"({shown}); the user can add a folder to NBAGENT_READ_ROOTS.")
    for protected in protections(resolved, data_folders):
        if any(_within(root, protected.anchor) and _within(resolved, root) for root in explicit):
            continue  # the user listed this place (or a folder in it) on purpose
        if protected.anchor == resolved and secret_file_reason(resolved) is not None:
            return None, (f"Refused: {path} is a secret file "
                          f"({secret_file_reason(resolved)}); the file tools never read keys "
                          "or credentials.")
        return None, (f"Refused: {path} is protected: {protected.reason}; the user can list "
                      "it in NBAGENT_READ_ROOTS to allow it.")
    return resolved, ""
