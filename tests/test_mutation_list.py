"""The mutation check (``tests/mutations.py``) stays applicable: each named fault's text occurs exactly
once in its file, so a refactor that moves or rewrites the code fails here, in the CI suite, instead of
leaving the mutation list to fail only when someone runs it (it had gone stale once: the warm weight
gradient's line was rewritten and ``weight_grad_transposed_layout`` no longer applied)."""

from __future__ import annotations

import pytest

from mutations import MUTATIONS, ROOT


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_once(m):
    text = (ROOT / m.path).read_text()
    assert text.count(m.old) == 1, f"{m.name}: its text occurs {text.count(m.old)} times in {m.path}"
    assert m.old != m.new
    for t in m.tests:
        assert (ROOT / t.split("::")[0]).is_file(), f"{m.name}: no test file {t}"
