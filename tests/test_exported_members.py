from __future__ import annotations

import nbagent


def test_all_lists_exactly_the_public_names_the_root_exports() -> None:
    public = {
        name
        for name, value in vars(nbagent).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("nbagent.")
    }
    constants = {name for name in nbagent.__all__ if name.isupper()}  # tuples carry no module
    assert set(nbagent.__all__) - constants == public
    assert all(not callable(getattr(nbagent, name)) for name in constants)
    assert len(nbagent.__all__) <= 40


def test_exported_names_are_documented_at_their_public_path() -> None:
    for name in nbagent.__all__:
        member = getattr(nbagent, name)
        assert member.__doc__, f"nbagent.{name} has no docstring"
