"""The engine's ids are intention-kernel's digests: sha256 of the compact, key-sorted JSON
that the json module (and JavaScript's JSON.stringify) writes."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from convlab.model._ids import case_thread, digest

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    case_id=_text,
    variant=st.dictionaries(_text, _text, max_size=3),
    n=st.integers(min_value=0, max_value=10**6),
)
def test_a_thread_id_is_the_digest_of_scenario_variants_and_repetition(case_id, variant, n):
    case_thread.cache_clear()
    made = case_thread("run1", case_id, tuple(variant.items()), n)
    value = {"scenarioId": case_id, "variants": variant, "repetition": n}
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert made == "run1:" + digest(value) == "run1:" + hashlib.sha256(text.encode()).hexdigest()


def test_start_times_are_iso_text_to_the_millisecond_in_utc():
    import time
    from datetime import UTC, datetime

    from convlab.engine._clock import now

    for _ in range(300):
        before = datetime.now(UTC).isoformat(timespec="milliseconds")
        made = now()
        after = datetime.now(UTC).isoformat(timespec="milliseconds")
        assert before <= made <= after and datetime.fromisoformat(made).tzinfo == UTC
        time.sleep(0.0004)
