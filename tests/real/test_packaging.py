"""widgets/ ships as nbagent.widgets, from an editable install and from a built wheel; the
sdist carries the MIT licence pyproject declares, every module and none of the tests (they
need the repository around them), and builds that wheel itself."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_nbagent_widgets_imports_from_the_source_folder_in_this_install() -> None:
    import nbagent.widgets

    assert Path(nbagent.widgets.__file__).resolve() == ROOT / "widgets" / "__init__.py"


def test_there_is_no_top_level_widgets_module() -> None:
    code = "import importlib.util as u; print(u.find_spec('widgets'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    assert out.stdout.strip() == "None"


@pytest.mark.real
def test_the_wheel_ships_widgets_inside_the_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "nbagent/widgets/__init__.py" in names
    assert not [n for n in names if n.startswith("widgets/")]


@pytest.mark.real
def test_the_wheel_ships_every_module_of_every_room(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {path.relative_to(ROOT).as_posix() for path in (ROOT / "nbagent").rglob("*.py")}
    sources |= {"nbagent/widgets/" + path.relative_to(ROOT / "widgets").as_posix()
                for path in (ROOT / "widgets").rglob("*.py")}
    assert sorted(sources - names) == []


@pytest.mark.real
def test_nbagent_widgets_imports_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "import nbagent, nbagent.widgets; print(nbagent.__file__); print(nbagent.widgets.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )
    package_file, widgets_file = out.stdout.split()
    assert Path(package_file).is_relative_to(target)
    assert Path(widgets_file) == target / "nbagent" / "widgets" / "__init__.py"
    assert not (target / "widgets").exists()


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist setuptools builds from the repository (its PEP 517 hook, as `python -m build
    --sdist` calls it, without an isolated environment)."""
    out = tmp_path_factory.mktemp("sdist")
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    (built,) = out.glob("jupyter_nbagent-*.tar.gz")
    return built


def _members(archive: Path) -> dict[str, str]:
    """The sdist's files by their path inside the project folder."""
    with tarfile.open(archive) as tar:
        return {name.split("/", 1)[1]: name for name in tar.getnames() if "/" in name}


@pytest.fixture(scope="module")
def wheel(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from that sdist, unpacked outside the repository (as from PyPI;
    and no build/ folder is left in the source tree, whose stale files would ship)."""
    out = tmp_path_factory.mktemp("wheel")
    with tarfile.open(sdist) as tar:
        tar.extractall(out / "src", filter="data")
    (unpacked,) = (out / "src").iterdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(unpacked)], check=True, capture_output=True)
    (built,) = out.glob("jupyter_nbagent-*.whl")
    return built


@pytest.mark.real
def test_the_sdist_carries_the_mit_licence_that_pyproject_declares(sdist: Path) -> None:
    members = _members(sdist)
    with tarfile.open(sdist) as tar:
        licence = tar.extractfile(members["LICENSE"]).read().decode()  # type: ignore[union-attr]
        info = tar.extractfile(members["PKG-INFO"]).read().decode()  # type: ignore[union-attr]
    assert licence.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in licence
    assert licence == (ROOT / "LICENSE").read_text()
    assert "License-Expression: MIT" in info.splitlines()
    assert "License-File: LICENSE" in info.splitlines()


@pytest.mark.real
def test_the_sdist_carries_every_module_and_no_test(sdist: Path) -> None:
    members = set(_members(sdist))
    sources = {path.relative_to(ROOT).as_posix() for path in (ROOT / "nbagent").rglob("*.py")}
    sources |= {path.relative_to(ROOT).as_posix() for path in (ROOT / "widgets").rglob("*.py")}
    assert sorted(sources - members) == []
    assert sorted(m for m in members if m.startswith("tests/") or "/tests/" in m) == []


@pytest.mark.real
def test_the_sdist_builds_a_wheel_that_carries_the_licence(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert "nbagent/widgets/_meter.py" in names and not [n for n in names if "tests/" in n]
