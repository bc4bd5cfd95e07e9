"""The file tools read only under the working directory and NBAGENT_READ_ROOTS, never a
secret file, whatever the spelling of the path; refusals are results the model can read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.agent.tools._files import read_text_page, secret_file_reason
from nbagent.testing import ScriptedModel, calls, reply


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook's working directory, with a folder beside it that is not a root."""
    folder = tmp_path / "work"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "private.txt").write_text("not yours\n")
    monkeypatch.chdir(folder)
    return folder


def test_a_file_under_the_working_directory_is_read_by_pages(work: Path) -> None:
    (work / "notes.txt").write_text("".join(f"line {n}\n" for n in range(5)))
    assert read_text_page("notes.txt", 0, 2) == "[lines 0–2 of 5; next offset 2]\nline 0\nline 1"
    assert read_text_page(str(work / "notes.txt"), 3, 10) == "[lines 3–5 of 5; end of file]\nline 3\nline 4"
    assert read_text_page("notes.txt", -4, 0) == "[lines 0–1 of 5; next offset 1]\nline 0"


def test_a_long_file_is_paged_without_reading_it_into_one_string(work: Path) -> None:
    with (work / "big.csv").open("w") as handle:
        handle.writelines(f"{n},{n * 2}\n" for n in range(100_000))
    assert read_text_page("big.csv", 99_998, 500) == \
        "[lines 99998–100000 of 100000; end of file]\n99998,199996\n99999,199998"


@pytest.mark.parametrize("path", ["../outside/private.txt", "{outside}/private.txt", "/etc/passwd",
                                  "~/../../etc/hostname"],
                         ids=["dot-dot", "absolute", "system file", "home and dot-dot"])
def test_a_path_that_resolves_outside_the_roots_is_refused(work: Path, path: str) -> None:
    path = path.format(outside=work.parent / "outside")
    result = read_text_page(path, 0, 10)
    assert result.startswith(f"Refused: {path} is outside the folders the file tools may read")
    assert "not yours" not in result and "\n" not in result


def test_a_symlink_out_of_the_roots_is_refused_and_one_within_is_followed(work: Path) -> None:
    (work / "escape.txt").symlink_to(work.parent / "outside" / "private.txt")
    (work / "data").mkdir()
    (work / "data" / "real.csv").write_text("a,b\n1,2\n")
    (work / "alias.csv").symlink_to(work / "data" / "real.csv")
    assert read_text_page("escape.txt", 0, 10).startswith("Refused: escape.txt is outside")
    assert read_text_page("alias.csv", 0, 10) == "[lines 0–2 of 2; end of file]\na,b\n1,2"


def test_nbagent_read_roots_adds_folders(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = work.parent / "extra"
    extra.mkdir()
    (extra / "shared.txt").write_text("shared\n")
    monkeypatch.setenv("NBAGENT_READ_ROOTS", os.pathsep.join([str(extra), str(work.parent / "outside")]))
    assert read_text_page(str(extra / "shared.txt"), 0, 5).endswith("\nshared")
    assert read_text_page("../outside/private.txt", 0, 5).endswith("\nnot yours")
    assert read_text_page("notes.txt", 0, 5) == "No file notes.txt."  # the cwd stays a root


def test_explicit_roots_replace_the_defaults(work: Path) -> None:
    (work / "here.txt").write_text("here\n")
    only = work.parent / "outside"
    assert read_text_page("here.txt", 0, 5, roots=[only]).startswith("Refused: here.txt is outside")
    assert read_text_page(str(only / "private.txt"), 0, 5, roots=[only]).endswith("\nnot yours")


@pytest.mark.parametrize("name", [".env", ".env.local", "config/.env.production", "id_rsa",
                                  "keys/server.pem", "tls/private.key", ".netrc", ".pgpass",
                                  ".git-credentials", "home/.ssh/config", "home/.ssh/known_hosts",
                                  "home/.aws/credentials", "Library/Keychains/login.keychain-db",
                                  "cert.p12", ".pypirc", "gcp/service-account-prod.json",
                                  "home/.config/gh/hosts.yml", "terraform.tfstate"])
def test_well_known_secret_files_are_refused_even_inside_the_roots(work: Path, name: str) -> None:
    path = work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("SECRET=do-not-read\n")
    result = read_text_page(name, 0, 10)
    assert result.startswith(f"Refused: {name} is a secret file") and "do-not-read" not in result


def test_a_harmless_name_linked_to_a_secret_file_is_refused(work: Path) -> None:
    (work / ".env").write_text("OPENAI_API_KEY=sk-do-not-read\n")
    (work / "settings.txt").symlink_to(work / ".env")
    assert read_text_page("settings.txt", 0, 5).startswith("Refused: settings.txt is a secret file")


@pytest.mark.parametrize("name", [".env.example", "id_rsa.pub", "keyboard.csv", "environment.yml",
                                  "credentials_report.md", "tokenizer.json", "monkey.key.txt"])
def test_ordinary_files_with_secret_sounding_names_are_read(work: Path, name: str) -> None:
    (work / name).write_text("ok\n")
    assert secret_file_reason(work / name) is None
    assert read_text_page(name, 0, 5).endswith("\nok")


@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/gshadow", "/proc/self/environ"])
def test_system_secrets_are_refused_even_when_the_root_is_everything(path: str) -> None:
    assert read_text_page(path, 0, 5, roots=[Path("/")]).startswith(f"Refused: {path} is a secret file")


def test_undecodable_bytes_are_shown_readably(work: Path) -> None:
    (work / "latin1.csv").write_bytes(b"name,city\nJos\xe9,M\xfcnchen\n")
    assert read_text_page("latin1.csv", 0, 5) == "[lines 0–2 of 2; end of file]\nname,city\nJos\\xe9,M\\xfcnchen"
    odd_name = os.fsdecode(b"caf\xe9.csv")
    (work / odd_name).write_text("ok\n")
    assert read_text_page(odd_name, 0, 5).endswith("\nok")


def test_folders_binaries_fifos_and_missing_files_get_a_clear_line(work: Path) -> None:
    (work / "folder").mkdir()
    (work / "data.parquet").write_bytes(b"PAR1\x00\x01\x02" * 100)
    os.mkfifo(work / "pipe")
    assert read_text_page("folder", 0, 5) == "folder is a folder, not a file."
    assert read_text_page("data.parquet", 0, 5).startswith("data.parquet is a binary file (700 bytes)")
    assert read_text_page("pipe", 0, 5) == "Refused: pipe is not a regular file."
    assert read_text_page("missing.csv", 0, 5) == "No file missing.csv."


def test_the_model_reading_a_secret_or_an_outside_file_gets_refusals(work: Path) -> None:
    (work / ".env").write_text("OPENAI_API_KEY=sk-do-not-read-0123456789abcdef\n")
    model = ScriptedModel([calls(("read_file", {"path": ".env"}),
                                 ("read_file", {"path": "../outside/private.txt"})),
                           reply("I may not read those.")])
    agent = Agent(model=model, namespace={})
    agent.chat("show me the .env and the private file")
    results = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert results[0].startswith("Refused: .env is a secret file")
    assert results[1].startswith("Refused: ../outside/private.txt is outside")
    sent = str(model.requests)  # nothing secret went to the provider
    assert "do-not-read" not in sent and "not yours" not in sent


# -- pages bounded in characters, bytes and lines; files streamed, never read whole ----------


def read_bytes_of_this_process() -> int:
    """What this process has read through system calls so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_one_line_file_of_megabytes_comes_back_as_one_bounded_page(work: Path) -> None:
    record = '{"id": 1, "name": "caf\u00e9", "tags": ["a", "b"]}, '
    (work / "big.json").write_text("[" + record * 80_000 + "]")  # ~3.6 MB, one line
    page = read_text_page("big.json", 0, 200)
    header, _, body = page.partition("\n")
    assert len(page) <= 16_000 + 300 and len(page.encode()) <= 32_000 + 300
    assert header == ("[lines 0–0 of 1; line 0 goes on: read_file(path='big.json', offset=0, "
                      f"start={len(body.encode())})]")
    assert body.startswith('[{"id": 1, "name": "café"')
    start = len(body.encode())
    second = read_text_page("big.json", 0, 200, start=start)
    head2, _, body2 = second.partition("\n")
    assert head2.startswith(f"[line 0 from byte {start:,} to line 0 of 1; line 0 goes on: ")
    joined = (body + body2).encode()
    assert (work / "big.json").read_bytes().startswith(joined)  # the pieces join exactly


def test_wide_characters_are_bounded_in_bytes_and_short_lines_in_lines(work: Path) -> None:
    (work / "emoji.txt").write_text("\U0001f600" * 30_000 + "\n")
    page = read_text_page("emoji.txt", 0, 5)
    assert len(page.encode()) <= 32_000 + 300 and "goes on" in page.splitlines()[0]
    (work / "short.txt").write_text("x\n" * 10_000)
    short = read_text_page("short.txt", 0, 10_000)
    assert short.splitlines()[0] == "[lines 0–500 of 10000; next offset 500]"
    assert len(short.splitlines()) == 501


def test_a_page_reads_only_what_it_shows_not_the_whole_file(work: Path) -> None:
    import tracemalloc

    size = 48 << 20  # a 48 MiB file of one line: no line count, no whole read
    with (work / "huge.log").open("wb") as handle:
        chunk = b"0123456789abcdef" * 65_536
        for _ in range(size // len(chunk)):
            handle.write(chunk)
    before = read_bytes_of_this_process()
    tracemalloc.start()
    page = read_text_page("huge.log", 0, 100)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    read = read_bytes_of_this_process() - before
    assert page.startswith(f"[lines 0–0 of a file of {size:,} bytes; line 0 goes on: ")
    assert read < size // 20 and peak < size // 20  # the old reader held the whole line


def test_a_text_header_with_a_sparse_or_nul_tail_is_binary(work: Path) -> None:
    with (work / "sparse.csv").open("wb") as handle:
        handle.write(b"a,b\n" * 5_000)
        handle.truncate(64 << 20)  # a hole after the text header
    with (work / "tail.csv").open("wb") as handle:
        handle.write(b"a,b\n" * 20_000 + b"\x00\x01\x02" * 10)
    for name in ("sparse.csv", "tail.csv"):
        assert read_text_page(name, 0, 5).startswith(f"{name} is a binary file")


def test_devices_and_sockets_are_refused_without_being_read(work: Path) -> None:
    import socket

    everything = [Path("/")]
    for device in ("/dev/zero", "/dev/urandom", "/dev/null"):
        result = read_text_page(device, 0, 5, roots=everything)
        assert result.startswith(f"Refused: {device} ") and "\x00" not in result
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(work / "kernel.sock"))
    try:
        assert read_text_page("kernel.sock", 0, 5) == "Refused: kernel.sock is not a regular file."
    finally:
        listener.close()


# -- confinement that holds in a home folder ---------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder used as the working directory (Jupyter started from `~`), holding
    the files a real home holds."""
    folder = tmp_path / "home"
    for name, text in {
        "analysis.csv": "a,b\n1,2\n", ".bashrc": "export TOKEN=x\n",
        ".bash_history": "export OPENAI_API_KEY=sk-typed\n", ".python_history": "pw = 'x'\n",
        ".netrc": "machine h login u password p\n", ".aws/credentials": "[default]\nkey=1\n",
        ".config/gcloud/credentials.db": "x\n", ".kube/config": "token: abc\n",
        ".docker/config.json": '{"auths": {}}\n', ".ssh/id_ed25519": "KEY\n",
        ".npmrc": "//registry/:_authToken=x\n", ".pypirc": "[pypi]\npassword=x\n",
        ".git-credentials": "https://u:p@github.com\n", ".config/myapp/settings.ini": "myapp-setting\n",
        ".local/share/jupyter/runtime/jpserver-123.json": '{"token": "jupyter-token"}\n',
        ".jupyter/jupyter_server_config.json": '{"ServerApp": {}}\n',
        ".local/share/nbagent/sessions/old.jsonl": '{"kind": "session"}\n',
        "projects/.env": "A=1\n", "projects/report.md": "# report\n",
    }.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    monkeypatch.setenv("HOME", str(folder))
    for name in ("JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                 "XDG_DATA_HOME", "NBAGENT_DATA_DIR", "NBAGENT_READ_ROOTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folder)
    return folder


PROTECTED_IN_HOME = [".bashrc", ".bash_history", ".python_history", ".netrc", ".aws/credentials",
                     ".config/gcloud/credentials.db", ".kube/config", ".docker/config.json",
                     ".ssh/id_ed25519", ".npmrc", ".pypirc", ".git-credentials",
                     ".config/myapp/settings.ini",
                     ".local/share/jupyter/runtime/jpserver-123.json",
                     ".jupyter/jupyter_server_config.json",
                     ".local/share/nbagent/sessions/old.jsonl", "projects/.env"]


@pytest.mark.parametrize("name", PROTECTED_IN_HOME)
def test_in_a_home_folder_hidden_jupyter_and_credential_files_are_refused(home: Path,
                                                                          name: str) -> None:
    for spelling in (name, str(home / name), f"~/{name}", f"projects/../{name}"):
        result = read_text_page(spelling, 0, 5)
        assert result.startswith(f"Refused: {spelling} is "), result
        assert "\n" not in result and (home / name).read_text().strip() not in result


def test_in_a_home_folder_ordinary_files_are_read(home: Path) -> None:
    assert read_text_page("analysis.csv", 0, 5).endswith("\na,b\n1,2")
    assert read_text_page("projects/report.md", 0, 5).endswith("\n# report")


def test_jupyter_and_nbagent_folders_are_refused_wherever_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, work: Path) -> None:
    runtime, data = work / "runtime", work / "nbagent-data"
    for folder, name in ((runtime, "kernel-1.json"), (data, "sessions/s.jsonl")):
        (folder / name).parent.mkdir(parents=True)
        (folder / name).write_text('{"key": "hmac-secret"}\n')
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(data))
    assert read_text_page("runtime/kernel-1.json", 0, 5).startswith("Refused:")
    result = read_text_page("nbagent-data/sessions/s.jsonl", 0, 5)
    assert result.startswith("Refused: nbagent-data/sessions/s.jsonl is protected: it is in "
                             "nbagent's data folder")


def test_nbagent_read_roots_opts_a_chosen_hidden_folder_back_in(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_READ_ROOTS", str(home / ".config" / "myapp"))
    assert read_text_page(".config/myapp/settings.ini", 0, 5).endswith("\nmyapp-setting")
    assert read_text_page(".bashrc", 0, 5).startswith("Refused:")  # only what was listed
    monkeypatch.setenv("NBAGENT_READ_ROOTS", str(home))  # listing ~ opts no dot-file in
    assert read_text_page(".bashrc", 0, 5).startswith("Refused:")


def test_a_symlink_swapped_in_after_the_check_is_not_followed(work: Path) -> None:
    from nbagent.agent.tools._confinement import check_readable
    from nbagent.agent.tools._files import open_confined
    from nbagent.engine._exceptions import Unreadable

    (work / "data").mkdir()
    (work / "data" / "rows.csv").write_text("a,b\n")
    secret = work.parent / "outside" / "private.txt"
    checked, reason = check_readable("data/rows.csv")
    assert checked is not None and reason == ""
    (work / "data" / "rows.csv").unlink()
    (work / "data" / "rows.csv").symlink_to(secret)  # the file becomes a link
    with pytest.raises(Unreadable, match="changed while it was being opened"):
        open_confined(checked, "data/rows.csv")
    (work / "data" / "rows.csv").unlink()
    (work / "data").rename(work / "data-real")
    (work / "data").symlink_to(secret.parent)  # a folder of its path becomes a link
    (secret.parent / "rows.csv").write_text("not yours\n")
    with pytest.raises(Unreadable, match="changed while it was being opened"):
        open_confined(checked, "data/rows.csv")


def test_a_hard_link_to_a_file_elsewhere_is_refused(work: Path) -> None:
    os.link(work.parent / "outside" / "private.txt", work / "innocent.txt")
    result = read_text_page("innocent.txt", 0, 5)
    assert result.startswith("Refused: innocent.txt has 2 names (hard links)")
    assert "not yours" not in result


def test_offsets_past_the_end_and_windows_line_ends(work: Path) -> None:
    (work / "crlf.csv").write_bytes(b"a,b\r\n1,2\r\n")
    assert read_text_page("crlf.csv", 0, 5) == "[lines 0–2 of 2; end of file]\na,b\n1,2"
    assert read_text_page("crlf.csv", 10**12, 5) == f"[lines {10**12}–{10**12} of 2; end of file]\n"
    (work / "one.txt").write_text("x" * 100 + "\nsecond\n")
    far = read_text_page("one.txt", 0, 5, start=10**15)  # clamped to the line's end
    assert far == "[line 0 from byte 100 to line 2 of 2; end of file]\n\nsecond"
