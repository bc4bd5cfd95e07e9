"""Every way a module of the package could write a file, found on its source, and every
call of the one helper that writes them (`agent/archive/_private_files`) with the row of
`WRITTEN` it names. tests/test_file_writers.py allows no writer outside the helper;
docs/security.md's list of the files nbagent writes (`tests.docs_blocks`) takes each row's
writers from the calls found here, so the list follows the code.

What counts as writing a file: creating, opening for writing, truncating, renaming or
linking a file or a folder, or changing its mode — by a builtin, `os`, `io`, `shutil`,
`tempfile`, `json`/`pickle` dumps, a database or archive module, or a method only a path
has (`write_text`, `mkdir`, `touch`, ...). Writing through a descriptor or handle the
helper opened (`os.write`, `fsync`, `ftruncate` on the archive's descriptor) is the
caller's: the helper's row for that file says why the content is not redacted there.
Removing a file (`unlink`) writes nothing and follows no link: it is not counted. Nor is
a `.replace(x)` on an unknown object (a history's, a string's and a path's look alike).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nbagent.agent.archive import _private_files
from nbagent.agent.archive._private_files import WRITTEN, WrittenFile

ROOT = Path(__file__).parents[1]
HELPER = "nbagent.agent.archive._private_files"

# Calls that write whatever their arguments say (by their full name once imports are read).
ALWAYS = frozenset({
    "os.makedirs", "os.mkdir", "os.replace", "os.rename", "os.renames", "os.link",
    "os.symlink", "os.truncate", "os.mkfifo", "os.mknod", "os.chmod", "os.lchmod",
    "os.chown", "os.lchown", "os.utime", "os.setxattr",
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move",
    "shutil.copymode", "shutil.copystat", "shutil.make_archive", "shutil.unpack_archive",
    "tempfile.TemporaryFile", "tempfile.NamedTemporaryFile", "tempfile.SpooledTemporaryFile",
    "tempfile.TemporaryDirectory", "tempfile.mkstemp", "tempfile.mkdtemp",
    "json.dump", "pickle.dump", "marshal.dump", "sqlite3.connect", "dbm.open", "shelve.open",
    "logging.FileHandler", "logging.handlers.RotatingFileHandler",
    "logging.handlers.TimedRotatingFileHandler", "logging.handlers.WatchedFileHandler",
})
# Methods only a path (or a data frame, a figure) has that write, whatever the receiver.
WRITING_METHODS = frozenset({
    "write_text", "write_bytes", "mkdir", "touch", "symlink_to", "hardlink_to", "chmod",
    "lchmod", "rename", "savefig", "to_csv", "to_parquet", "to_pickle", "to_excel",
    "to_feather", "to_hdf",
})
# Calls that write when their mode says so; the argument position of the mode. A mode
# that is not written out (a variable) counts as writing: nothing shows it does not.
MODE_AT = {"open": 1, "io.open": 1, "os.fdopen": 1, "io.FileIO": 1, "codecs.open": 1,
           "zipfile.ZipFile": 1}
_MODE = re.compile(r"[rwxabtU+]{1,4}(?::\w*)?")
_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND",
                          "O_TMPFILE", "O_EXCL"})


def modules() -> Iterator[tuple[str, Path]]:
    """Every module of the package and of the notebook room, by its dotted name."""
    for path in sorted((ROOT / "nbagent").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path
    for path in sorted((ROOT / "widgets").rglob("*.py")):
        parts = path.relative_to(ROOT / "widgets").with_suffix("").parts
        yield ".".join(("nbagent.widgets", *(p for p in parts if p != "__init__"))), path


def _imported_names(tree: ast.AST, module: str) -> dict[str, str]:
    """Each local name an import binds (anywhere in the file) -> the full name it means."""
    package = module.rpartition(".")[0]
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    root = alias.name.partition(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, node.module] if node.module else parts)
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _full_name(node: ast.expr, names: dict[str, str]) -> str | None:
    """`a.b.c` with `a` read through the imports (a builtin keeps its name), else None."""
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        inner = _full_name(node.value, names)
        return f"{inner}.{node.attr}" if inner is not None else f"?.{node.attr}"
    return None


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _mode_writes(mode: ast.expr | None, *, unknown: bool) -> bool:
    if mode is None:
        return False  # the default mode reads
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(_MODE.fullmatch(mode.value)) and bool(set("wax+") & set(mode.value))
    return unknown


def _flags_write(flags: ast.expr | None) -> bool:
    """Whether `os.open`'s flags may write: a write flag named, or no `O_RDONLY` to show
    it only reads (flags kept in a variable)."""
    if flags is None:
        return True
    named = {n.attr for n in ast.walk(flags) if isinstance(n, ast.Attribute)}
    named |= {n.id for n in ast.walk(flags) if isinstance(n, ast.Name)}
    named |= {n.value for n in ast.walk(flags)
              if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return bool(named & _WRITE_FLAGS) or "O_RDONLY" not in named


def _writes(call: ast.Call, names: dict[str, str]) -> str | None:
    """What `call` is, if it writes a file (its full name), else None."""
    name = _full_name(call.func, names)
    if name is None:
        return None
    method = name.rpartition(".")[2]
    if name in ALWAYS or ("." in name and method in WRITING_METHODS):
        return name
    if name == "os.open":
        return name if _flags_write(_argument(call, 1, "flags")) else None
    if name in MODE_AT:
        return name if _mode_writes(_argument(call, MODE_AT[name], "mode"), unknown=True) \
            else None
    if method == "open" and "." in name:  # a path's `open(mode)`, a module's `open(f, mode)`
        modes = [a for a in call.args[:2]] + [k.value for k in call.keywords if k.arg == "mode"]
        return name if any(_mode_writes(m, unknown=False) for m in modes) or any(
            k.arg == "mode" and _mode_writes(k.value, unknown=True)
            for k in call.keywords) else None
    return None


def writers_in(source: str, module: str = "nbagent.example") -> list[str]:
    """Each call in `source` that writes a file: `line N: name`."""
    tree = ast.parse(source)
    names = _imported_names(tree, module)
    return [f"line {node.lineno}: {found}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and (found := _writes(node, names)) is not None]


@functools.cache
def stray_writers() -> dict[str, list[str]]:
    """Every module but the helper, with the calls in it that write a file."""
    found = {}
    for module, path in modules():
        if module != HELPER:
            calls = writers_in(path.read_text(encoding="utf-8"), module)
            if calls:
                found[module] = calls
    return found


# The helper's functions that write, each taking the row it writes as `kind=`.
WRITING = frozenset(name for name, function in inspect.getmembers(_private_files,
                                                                 inspect.isfunction)
                    if not name.startswith("_") and function.__module__ == HELPER
                    and "kind" in inspect.signature(function).parameters)
ROWS = {name: row for name, row in vars(_private_files).items() if isinstance(row, WrittenFile)}


@dataclass(frozen=True)
class HelperCall:
    module: str
    line: int
    function: str
    row: WrittenFile | None  # None: `kind=` names no row of `WRITTEN`


@functools.cache
def helper_calls() -> tuple[HelperCall, ...]:
    """Every call of one of the helper's writing functions in the package."""
    found = []
    for module, path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _imported_names(tree, module)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _full_name(node.func, names) or ""
            prefix, _, function = name.rpartition(".")
            if prefix != HELPER or function not in WRITING:
                continue
            kind = next((k.value for k in node.keywords if k.arg == "kind"), None)
            named = kind.id if isinstance(kind, ast.Name) else \
                kind.attr if isinstance(kind, ast.Attribute) else None
            row = ROWS.get(named or "")
            found.append(HelperCall(module, node.lineno, function,
                                    row if row in WRITTEN else None))
    return tuple(found)


def writers_of(row: WrittenFile) -> list[str]:
    """The modules that write `row`'s file, as paths from the repository's root."""
    modules_ = sorted({call.module for call in helper_calls() if call.row is row})
    return [m.replace("nbagent.widgets", "widgets").replace(".", "/") + ".py"
            for m in modules_]
