"""An agent's questions reach the operator of an interactive run, and never hang other runs."""

from conftest import Lab, result_of, run

WORKER = "hermes-worker-1"
ASK = 'CALL clarify {"question": "Which device should I check?"}'


LAB = Lab(workers={WORKER: {"alpha": {"instructions": "You are ALPHA.", "toolsets": ["clarify"], "run_timeout": 60}}})


def test_interactive_run_asks_the_operator_and_uses_the_answer(nf):
    future = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "alpha", "instructions": ASK, "interactive": True}, workers=WORKER
    )
    questions = []
    for event in future.events(timeout=60):
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:
            questions.append(request["question"])
            future.send_response(input_id=request["id"], value="r2, it flapped last night", worker=WORKER)
    result = result_of(future, WORKER)["result"]
    assert questions == ["Which device should I check?"]
    assert result["stop_reason"] == "completed"
    assert "r2, it flapped last night" in result["response"]


def test_non_interactive_run_is_told_at_once_that_nobody_can_answer(nf):
    res = run(nf.client, "invoke", agent="alpha", instructions=ASK)
    result = res["result"]
    assert result["stop_reason"] == "completed"  # a question left waiting would end it run_timeout
    assert "not interactive" in result["response"]


def test_cancelled_question_is_reported_to_the_agent(nf):
    future = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "alpha", "instructions": ASK, "interactive": True}, workers=WORKER
    )
    for event in future.events(timeout=60):
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:
            future.send_response(input_id=request["id"], value=None, cancel=True, worker=WORKER)
    result = result_of(future, WORKER)["result"]
    assert "cancelled the question" in result["response"]


def test_native_tool_calls_are_summarised(nf):
    result = run(nf.client, "invoke", agent="alpha", instructions=ASK)["result"]
    [call] = result["tool_calls"]
    assert (call["tool"], call["service"], call["job_uuid"], call["status"]) == ("clarify", None, None, "completed")
    assert len(call["arguments_digest"]) == 12
