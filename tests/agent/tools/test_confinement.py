"""Which files the file tools may read (`nbagent.agent.tools._confinement`): only under the
working directory and NBAGENT_READ_ROOTS (explicit roots replace the defaults), never a
well-known secret file, a system secret, or a file a harmless name links to; in a home
folder no dot-file, credential, Jupyter runtime or config file, nor nbagent's own data,
whatever the spelling of the path, unless a listed root opts a chosen folder back in;
ordinary files with secret-sounding names are read. A folder added as an implicit root
(`extra_implicit`) is read as the working directory is, opting nothing back in. The data
folder an agent's own `data_dir` setting names is refused as the environment's is, even in
the working directory. The `work` fixture is in conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbagent.agent.tools import _confinement, read_text_page, secret_file_reason


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
                                  "home/.config/gh/hosts.yml", "terraform.tfstate",
                                  "vpn/office.ovpn"])
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


@pytest.mark.parametrize("place", _confinement._SECRET_PLACES)
def test_each_secret_place_is_refused_and_named_as_written(place: str) -> None:
    # the place with each `*` a folder or name; the reason names the place less its
    # wildcards, an absolute one with its leading "/" ("/etc/ssl/private", ".ssh")
    reason = secret_file_reason(Path(place.replace("*", "x")))
    assert reason is not None and reason.endswith(" holds keys or credentials")
    shown = reason.removesuffix(" holds keys or credentials")
    assert shown in place and shown.startswith("/") == place.startswith("/")


def test_an_absolute_place_keeps_its_slash_in_the_refusal(tmp_path: Path) -> None:
    assert secret_file_reason(Path("/etc/ssl/private/host")) == (
        "/etc/ssl/private holds keys or credentials")
    assert secret_file_reason(tmp_path / ".ssh" / "config") == ".ssh holds keys or credentials"
    assert read_text_page("/etc/ssl/private/host", 0, 5, roots=[Path("/")]) == (
        "Refused: /etc/ssl/private/host is a secret file (/etc/ssl/private holds keys or "
        "credentials); the file tools never read keys or credentials.")


@pytest.mark.parametrize("name", sorted(_confinement._SECRET_NAMES))
def test_each_secret_name_is_refused_in_any_folder_and_case(name: str) -> None:
    for path in (Path("work") / name, Path("/srv/data") / name.upper()):
        assert secret_file_reason(path) == f"{path.name} holds keys or credentials"


@pytest.mark.parametrize("pattern", _confinement._SECRET_PATTERNS)
def test_each_secret_pattern_is_refused_in_any_folder_and_case(pattern: str) -> None:
    # names are compared lowercased: a pattern with a capital letter would never match, and
    # nothing else reads each pattern (the docs block only prints it)
    name = pattern.replace("*", "x")
    for path in (Path("work") / name, Path("/srv/data") / name.upper()):
        assert secret_file_reason(path) == f"{path.name} holds keys or credentials"


@pytest.mark.parametrize("name", _confinement._SAFE_NAMES)
def test_each_safe_name_is_no_secret_even_in_a_secret_place(name: str) -> None:
    assert secret_file_reason(Path("/srv/.ssh") / name.replace("*", "id_rsa")) is None


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


# -- implicit and explicit roots --------------------------------------------------------------


def test_an_extra_implicit_root_is_read_as_the_working_directory_is(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "this folder too" (a notebook's folder, say) adds an implicit root: its ordinary files
    # are read, every protected place in it stays refused, and the working directory stays
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "here.txt").write_text("here\n")
    monkeypatch.chdir(elsewhere)
    assert read_text_page(str(home / "analysis.csv"), 0, 5).startswith("Refused: ")
    assert read_text_page(str(home / "analysis.csv"), 0, 5,
                          extra_implicit=[home]).endswith("\na,b\n1,2")
    assert read_text_page("here.txt", 0, 5, extra_implicit=[home]).endswith("\nhere")
    for name in PROTECTED_IN_HOME:  # hidden home files, credentials, Jupyter's, nbagent's
        result = read_text_page(str(home / name), 0, 5, extra_implicit=[home])
        assert result.startswith(f"Refused: {home / name} is "), result
        assert "is outside" not in result and "\n" not in result  # one line, no content
    assert read_text_page(str(home / "projects" / ".env"), 0, 5, extra_implicit=[home]) \
        .startswith(f"Refused: {home / 'projects' / '.env'} is a secret file")


def test_an_implicit_root_in_a_protected_place_opts_nothing_in_an_explicit_one_does(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    myapp = home / ".config" / "myapp"
    settings = str(myapp / "settings.ini")
    refused = read_text_page(settings, 0, 5, extra_implicit=[myapp])
    assert refused.startswith(f"Refused: {settings} is protected: it is hidden in the home")
    assert read_text_page(settings, 0, 5, roots=[myapp]).endswith("\nmyapp-setting")
    # `roots` replaces the working directory, not the extra implicit roots
    (tmp_path / "here.txt").write_text("here\n")
    assert read_text_page("here.txt", 0, 5, roots=[myapp]).startswith("Refused: here.txt is outside")
    assert read_text_page(settings, 0, 5, roots=[tmp_path], extra_implicit=[myapp]).startswith(
        f"Refused: {settings} is protected")
    assert read_text_page(str(home / "analysis.csv"), 0, 5, roots=[myapp],
                          extra_implicit=[home]).endswith("\na,b\n1,2")


# -- the session's own data folder ------------------------------------------------------------


def test_the_data_folder_a_session_names_is_refused_beside_the_environments(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an agent's `data_dir` setting (`Agent(settings={"data_dir": "./arch"})`) may put its
    # archives in the working directory: read_file refuses them, and the environment's
    # folder (an earlier session's archives) stays refused too
    from nbagent import Settings
    from tests.agent.tools.helpers import tools

    old = work / "old-data"
    for name in ("arch/sessions/s.jsonl", "old-data/sessions/o.jsonl"):
        (work / name).parent.mkdir(parents=True)
        (work / name).write_text('{"kind": "user", "text": "another session"}\n')
    (work / "notes.txt").write_text("mine\n")
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(old))
    read_file = tools({}, settings=lambda: Settings(data_dir="./arch"))["read_file"]
    for spelling in ("arch/sessions/s.jsonl", str(work / "arch" / "sessions" / "s.jsonl"),
                     "notes.txt/../arch/sessions/s.jsonl", "old-data/sessions/o.jsonl"):
        result = read_file(path=spelling)
        assert result.startswith(f"Refused: {spelling} is protected: it is in nbagent's data "
                                 "folder (session archives)"), result
        assert "another session" not in result
    assert read_file(path="notes.txt").endswith("\nmine")
    # the confinement's own answer, and a root listed inside that folder still opts it in
    arch = work / "arch"
    assert _confinement.check_readable("arch/sessions/s.jsonl", data_folders=[arch])[0] is None
    assert _confinement.check_readable("arch/sessions/s.jsonl", [arch], data_folders=[arch])[0] \
        == arch / "sessions" / "s.jsonl"


def test_an_agents_read_file_refuses_the_data_folder_its_settings_name(work: Path) -> None:
    from nbagent.testing import ScriptedModel
    from tests.helpers import make_agent

    for name in ("arch/sessions/s.jsonl", "later/sessions/l.jsonl"):
        (work / name).parent.mkdir(parents=True)
        (work / name).write_text('{"kind": "user", "text": "another session"}\n')
    (work / "notes.txt").write_text("mine\n")
    agent, _ = make_agent(ScriptedModel([]), settings={"data_dir": "./arch"})
    refused = agent.tools["read_file"](path="arch/sessions/s.jsonl")
    assert refused.startswith("Refused: arch/sessions/s.jsonl is protected: it is in "
                              "nbagent's data folder"), refused
    assert agent.tools["read_file"](path="notes.txt").endswith("\nmine")
    agent.configure(data_dir="./later")  # `%nbagent data_dir=./later`: read when a tool runs
    assert agent.tools["read_file"](path="later/sessions/l.jsonl").startswith(
        "Refused: later/sessions/l.jsonl is protected: it is in nbagent's data folder")


def test_the_archive_a_session_really_writes_stays_refused_wherever_it_is(
        work: Path) -> None:
    # the setting changed since the session began, or a session resumed from a file that
    # sits in no data folder: the archive it writes is still refused, and nothing else more
    from nbagent import Agent
    from nbagent.testing import ScriptedModel
    from tests.helpers import make_agent

    (work / "notes.txt").write_text("mine\n")
    agent, _ = make_agent(ScriptedModel(default="noted"), settings={"data_dir": "./first"},
                          archive=True)
    agent.chat("hello")
    agent.configure(data_dir="./second")
    written = f"first/sessions/{agent.session_id}.jsonl"
    assert (work / written).is_file()
    assert agent.tools["read_file"](path=written).startswith(
        f"Refused: {written} is protected: it is in nbagent's data folder")
    agent.close()
    (work / written).rename(work / "kept.jsonl")
    resumed = Agent.resume("kept.jsonl", model=ScriptedModel(default="noted"), namespace={})
    try:
        assert resumed.tools["read_file"](path="kept.jsonl").startswith(
            "Refused: kept.jsonl is protected: it is in nbagent's data folder")
        assert resumed.tools["read_file"](path="notes.txt").endswith("\nmine")
    finally:
        resumed.close()


def test_a_session_resumed_from_a_sessions_folder_in_the_working_directory_refuses_only_it(
        work: Path) -> None:
    from nbagent import Agent
    from nbagent.testing import ScriptedModel
    from tests.helpers import make_agent

    (work / "notes.txt").write_text("mine\n")
    agent, _ = make_agent(ScriptedModel(default="noted"), settings={"data_dir": str(work)},
                          archive=True)
    agent.chat("hello")
    agent.close()
    kept = f"sessions/{agent.session_id}.jsonl"  # the working directory was its data folder
    resumed = Agent.resume(kept, model=ScriptedModel(default="noted"), namespace={})
    try:
        assert resumed.tools["read_file"](path=kept).startswith(f"Refused: {kept} is protected")
        assert resumed.tools["read_file"](path="notes.txt").endswith("\nmine")
    finally:
        resumed.close()
