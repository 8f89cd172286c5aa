"""`model._trusted`: pydantic's own construction, copy and assignment, for the models the
engine builds from its own values."""

from __future__ import annotations

import pytest

from convlab.model._trusted import assign, build, copied, dumped, dumped_json
from convlab.model.conversation import Message, Observation, ToolCall, message_dict
from convlab.model.results import AssertionResult, CaseResult, TurnResult

TRUSTED = [TurnResult, Observation, CaseResult, AssertionResult, Message]


@pytest.mark.parametrize("model", TRUSTED)
def test_the_models_the_engine_builds_validate_no_assignment_and_keep_no_private_state(model):
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


def _same(built, made):
    assert built == made
    assert type(built) is type(made)
    assert built.model_fields_set == made.model_fields_set
    assert built.__pydantic_extra__ == made.__pydantic_extra__
    for mode in ("python", "json"):
        assert built.model_dump(mode=mode) == made.model_dump(mode=mode)
        assert built.model_dump(mode=mode, exclude_unset=True) == made.model_dump(
            mode=mode, exclude_unset=True
        )
        assert built.model_dump(mode=mode, exclude_defaults=True) == made.model_dump(
            mode=mode, exclude_defaults=True
        )


@pytest.mark.parametrize(
    ("model", "values"),
    [
        (Message, {"role": "assistant", "content": "ok"}),
        (Message, {}),
        (TurnResult, {"index": 2, "step_id": "s", "messages": [Message(content="hi")]}),
        (
            Observation,
            {
                "text": "ok",
                "data": {"a": [1]},
                "tool_calls": [ToolCall("f", {"x": 1})],
                "messages": [Message(role="assistant", content="ok")],
                "status": "completed",
                "facts": [],
                "events": [],
            },
        ),
        (CaseResult, {"case_id": "c", "status": "skipped", "variant": {"s": "v"}, "reward": 0.0}),
        (CaseResult, {"case_id": "c", "status": "failed", "blame": "agent", "error": "x"}),
        (CaseResult, {"case_id": "c", "status": "passed", "duration_ms": 1.25, "attempts": 2}),
    ],
)
def test_build_makes_the_model_pydantic_makes_from_the_same_values(model, values):
    _same(build(model, **values), model(**values))


def test_built_models_never_share_a_default():
    a, b = (
        build(CaseResult, case_id="a", status="passed"),
        build(CaseResult, case_id="b", status="passed"),
    )
    a.turns.append(TurnResult(index=0))
    a.metadata["k"] = 1
    assert b.turns == [] and b.metadata == {}
    assert (
        build(Message).__pydantic_extra__ == {}
        and build(TurnResult, index=0).__pydantic_extra__ is None
    )


def test_copied_is_model_copy_and_shares_nothing_a_change_reaches():
    original = Message(role="user", content="hi", refusal="no")  # an extra key
    copy = copied(original)
    _same(copy, original.model_copy())
    copy.content = "changed"
    copy.__pydantic_extra__["refusal"] = "yes"
    assert original.content == "hi" and original.refusal == "no"


@pytest.mark.parametrize("model", TRUSTED)
def test_a_built_model_keeps_its_fields_in_the_class_order_that_pydantic_serializes(model):
    """pydantic's serializer walks `__dict__` in the class's field order: built out of order,
    JSON key order changes and some fields are not written at all."""
    required = {name: "x" for name, f in model.model_fields.items() if f.is_required()}
    required |= {TurnResult: {"index": 1}, CaseResult: {"status": "passed"}}.get(model, {})
    last = list(model.model_fields)[-1]
    built = build(model, **required)
    assert list(built.__dict__) == list(model.model_fields)
    made = model(**required)
    assert built.model_dump_json() == made.model_dump_json()
    assert last in built.model_dump()


def test_build_refuses_a_field_the_model_does_not_have_or_lacks_a_required_one():
    with pytest.raises(TypeError, match="unknown fields \\['nope'\\]"):
        build(Message, nope=1)
    with pytest.raises(TypeError, match="missing fields \\['index'\\]"):
        build(TurnResult)


MESSAGES = [
    Message(content="hi"),
    Message(role="assistant", content=None),
    Message(role="tool", content="{}", tool_call_id="1", name="f"),
    Message(role="assistant", content="x", tool_calls=[{"id": "1", "type": "function"}]),
    Message(role="user", content=[{"type": "text", "text": "parts"}]),
    Message(role="assistant", content="ok", refusal="extra key"),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_message_dict_is_pydantics_dump_without_nones(message):
    assert message_dict(message) == message.model_dump(exclude_none=True)
    assert list(message_dict(message)) == list(message.model_dump(exclude_none=True))


@pytest.mark.parametrize("options", [{}, {"exclude_none": True}, {"mode": "json"}])
def test_dumped_is_model_dump_and_dumped_json_model_dump_json(options):
    r = CaseResult(case_id="c", status="failed", turns=[TurnResult(index=0, messages=MESSAGES)])
    assert dumped(r, **options) == r.model_dump(**options)
    json_options = {k: v for k, v in options.items() if k != "mode"}
    assert dumped_json(r, **json_options) == r.model_dump_json(**json_options)
