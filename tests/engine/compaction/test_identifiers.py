"""Names found by general rules, not a session's own: paths, names code gives a role,
columns of printed output, names the user wrote; library internals, options and dtypes
are not names."""

from __future__ import annotations

import pytest

from nbagent.engine.compaction._identifiers import clean, names_in_output
from tests.engine.compaction.sessions import (
    FRAME,
    INFO,
    TRACEBACK,
    names,
    python_round,
)

IDENTIFIER_CASES = [
    ("user", "Please open ~/projects/trial/visits.feather and tell me about it.",
     {"~/projects/trial/visits.feather"}),
    ("user", "Why is `dose_schedule` empty? Also check the 'arm' column.", {"dose_schedule", "arm"}),
    ("user", "Compare patientAge with BMIScore and cohort_label.",
     {"patientAge", "BMIScore", "cohort_label"}),
    ("code", "visits = pd.read_parquet('s3/raw/visits.parquet')\nvisits['arm'].value_counts()",
     {"visits", "arm", "s3/raw/visits.parquet"}),
    ("code", "X, y = prep(frame)\nfeatures = frame[['age', 'weight kg']]\nfit_model(X)",
     {"X", "features", "age", "weight kg", "fit_model"}),
    ("code", "summary = visits.groupby(by='clinic').dose.mean()", {"summary", "clinic"}),
    ("code", "trial.df.sort_values('visit_date', ascending=False)", {"trial.df", "visit_date"}),
    ("output", FRAME, {"account_ref", "signup_day", "plan_tier", "mrr"}),
    ("output", INFO, {"visit_id", "clinic"}),
    ("output", "| site | enrolled |\n|---|---|\n| Leeds | 40 |", {"site", "enrolled"}),
    ("output", "site,enrolled,dropout rate\nLeeds,40,0.1", {"site", "enrolled", "dropout rate"}),
    ("output", "Index(['arm', 'dose'], dtype='object')", {"arm", "dose"}),
    ("output", "wrote 412 rows to out/clean/visits_v2.csv", {"out/clean/visits_v2.csv"}),
    ("output", "visit_ts    datetime64[ns, UTC]\nclinic      category\ndose_mg     Float64\n"
     "dtype: object", {"visit_ts", "clinic", "dose_mg"}),  # df.dtypes
    ("output", "            score  weight\nsubject_id               \n17           0.93    71.2",
     {"score", "weight"}),  # the index's name on a line of its own
    ("output", "  Country  Visitor Rating  Visits\n0      FR             4.5     120",
     {"Country", "Visitor Rating", "Visits"}),  # a name with a space: two spaces apart
    ("output", "Country               str\nVisitor Rating    float64\ndtype: object",
     {"Country", "Visitor Rating"}),  # pandas 3's str dtype, a name with a space
]


def test_a_tables_cell_values_are_not_names() -> None:
    table = ("  Country  Visitor Rating\n0      FR             4.5\n1     NaN             NaN\n"
             "2      CA             3.9")
    found = {name for name, _ in clean(names_in_output(table))}
    assert found == {"Country", "Visitor Rating"}


def _found(kind: str, text: str) -> set[str]:
    if kind == "user":
        return names([{"role": "user", "content": text}])
    if kind == "code":
        return names(python_round(0, "go", text, "ok")[1:2])
    return {name for name, _ in clean(names_in_output(text))}


@pytest.mark.parametrize(("kind", "text", "expected"), IDENTIFIER_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(IDENTIFIER_CASES)])
def test_identifiers_are_found_by_general_rules(kind: str, text: str, expected: set[str]) -> None:
    assert expected <= _found(kind, text)


def test_library_internals_options_and_dtypes_are_not_names() -> None:
    found = names(python_round(0, "go", "df = pd.read_csv('a.csv', sep=';', how='left')",
                               TRACEBACK + "\n" + INFO))
    assert not {n for n in found if "site-packages" in n}
    assert not {"left", ";", "int64", "object", "RangeIndex", "KeyError", "pd"} & found
