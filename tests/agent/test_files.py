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
