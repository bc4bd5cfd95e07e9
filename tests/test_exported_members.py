from __future__ import annotations

import pytest

import nbagent


def test_all_lists_exactly_the_public_names_the_root_exports() -> None:
    """The root loads its names on first use (PEP 562): once each is used, what the module
    holds is `__all__`, and a name outside it is not there."""
    for name in nbagent.__all__:
        getattr(nbagent, name)
    with pytest.raises(AttributeError):
        nbagent.not_a_name  # type: ignore[attr-defined]  # noqa: B018
    public = {
        name
        for name, value in vars(nbagent).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("nbagent.")
    }
    assert sorted(dir(nbagent)) == sorted({*vars(nbagent), *nbagent.__all__})
    constants = {name for name in nbagent.__all__ if name.isupper()}  # tuples carry no module
    assert set(nbagent.__all__) - constants == public
    assert all(not callable(getattr(nbagent, name)) for name in constants)
    assert len(nbagent.__all__) <= 40


def test_exported_names_are_documented_at_their_public_path() -> None:
    for name in nbagent.__all__:
        member = getattr(nbagent, name)
        assert member.__doc__, f"nbagent.{name} has no docstring"


def test_nbagent_compaction_is_the_one_public_path_to_the_levels() -> None:
    """nbagent.compaction re-exports every name of the engine's compaction package (the
    room's own door) and the ladder, so a user never needs the engine path."""
    import nbagent.compaction as public
    from nbagent.engine import compaction as room

    missing = sorted(set(room.__all__) - set(public.__all__))
    assert missing == []
    assert all(getattr(public, name) is getattr(room, name) for name in room.__all__)
