"""`engine._assign.assign` is pydantic's own assignment, for the models the engine sets."""

from __future__ import annotations

import pytest

from convlab.engine._assign import assign
from convlab.model.conversation import Observation
from convlab.model.results import AssertionResult, CaseResult, TurnResult


@pytest.mark.parametrize("model", [TurnResult, Observation, CaseResult, AssertionResult])
def test_the_models_the_engine_assigns_to_validate_no_assignment_and_keep_no_private_state(
    model,
):
    config = model.model_config
    assert not config.get("validate_assignment") and not config.get("frozen")
    assert not model.__private_attributes__
    assert not any(f.frozen for f in model.model_fields.values())


def test_assign_leaves_a_model_as_setattr_does():
    a, b = TurnResult(index=0), TurnResult(index=0)
    obs = Observation(text="hi")
    a.observation, a.duration_ms, a.status = obs, 1.5, "failed"
    assign(b, observation=obs, duration_ms=1.5, status="failed")
    assert a == b and a.model_fields_set == b.model_fields_set
    assert a.model_dump_json(exclude_unset=True) == b.model_dump_json(exclude_unset=True)
