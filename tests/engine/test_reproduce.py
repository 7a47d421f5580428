"""A failed check's reproducer (grader/engine/reproduce.py finds its case; engine/wording.py
writes it as code in the student's language)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.known.test_reproducers import self_reliance


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_reproducer_is_plain_python_with_its_messages_in_the_students_language(
        lang: str, tmp_path: Path) -> None:
    from grader.engine.wording import reproducer_text
    from grader.labs import get_lab
    from grader.labs.reproducers import Assert, Close, Raise, Reproducer, Runtime

    reproducer = Reproducer(("sgd_step",), (
        "x = torch.zeros(3)",
        "for i in range(2):",
        Assert("i < 1", "storage_replaced", {"function": "sgd_step",
                                              "tensor": Runtime("i", around="params[{}]")},
               indent=1),
        Close("x", "torch.ones(3)", "float32", "values", {"function": "f", "tensor": "x"}),
        "try:", "    1 / 0", "except Exception as error:",
        Raise("error", "raised", {"function": "sgd_step"}, indent=1),
    ))
    text = reproducer_text(reproducer, check_id="sgd_step.same_storage",
                           lab=get_lab("optim"), lang=lang)
    assert text.startswith("# ") and "sgd_step.same_storage" in text.splitlines()[0]
    assert "from optimizer import sgd_step" in text
    assert "torch.use_deterministic_algorithms(True" in text  # values are compared
    assert not self_reliance(text)
    compile(text, "reproducer", "exec")
    namespace: dict[str, object] = {}
    body = text.replace("from optimizer import sgd_step\n", "")
    with pytest.raises(AssertionError) as raised:
        exec(compile(body, "reproducer", "exec"), namespace)
    assert "params[1]" in str(raised.value)  # the run-time index, in the message
    assert ("memory" in str(raised.value)) if lang == "en" else ("메모리" in str(raised.value))
    notebook = reproducer_text(reproducer, check_id="sgd_step.same_storage",
                               lab=get_lab("optim"), lang=lang, notebook=True)
    assert "import sgd_step" not in notebook


def test_the_failing_case_is_the_first_that_fails_as_the_row_did() -> None:
    from grader.checks.evidence import Evidence
    from grader.checks.findings import PASS, Finding, fail
    from grader.engine.reproduce import failing_case
    from grader.labs.base import CheckSpec

    def judge(evidence: Evidence) -> Finding:
        for case in evidence.plan:
            if case["id"] in ("b", "c"):
                return fail("raised" if case["id"] == "b" else "values_mismatch")
        return PASS

    check = CheckSpec("f.values", "numerics", judge)
    evidence = Evidence(api={}, static_policy=[], policy_calls=[],
                        cases={"a": {}, "b": {}, "c": {}},
                        plan=({"id": "a"}, {"id": "b"}, {"id": "c"}))
    found = failing_case(check, evidence, fail("values_mismatch"))
    assert found is not None and found[0]["id"] == "c"
    found = failing_case(check, evidence, fail("storage_replaced"))
    assert found is not None and found[0]["id"] == "b"  # none fails alike: the first failure
