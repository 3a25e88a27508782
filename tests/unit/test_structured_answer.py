"""Structured answers: parsed and checked against the schema, one corrective turn, the reason when none (no NorFab)."""

from types import SimpleNamespace

from norfab_hermes.models import InvokeResultData, RunUsage
from norfab_hermes.worker.runs import answer

SCHEMA = {"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]}


def result(response, stop="completed", tokens=10):
    return InvokeResultData(
        response=response,
        run_id="r",
        agent="a",
        worker="w",
        stop_reason=stop,
        usage=RunUsage(api_calls=tokens // 10, input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1),
    )


class FakeRun(SimpleNamespace):
    def __init__(self, schema=SCHEMA, left=60.0):
        super().__init__(response_schema=schema, run_id="r", stop_reason="completed", stop_message="", events=[])
        self.left = left

    def remaining(self):
        return self.left

    def event(self, message, severity="INFO"):
        self.events.append(message)


def test_an_answer_is_the_whole_text_or_its_first_fenced_block():
    assert answer.check('{"ready": true}', SCHEMA) == ({"ready": True}, None)
    assert answer.check('Here:\n```json\n{"ready": false}\n```', SCHEMA) == ({"ready": False}, None)
    assert answer.check("ready: yes", SCHEMA) == (None, "the answer is not JSON (nor does it hold a fenced JSON block)")
    value, error = answer.check('{"ready": "yes"}', SCHEMA)
    assert value is None
    assert error == "ready: 'yes' is not of type 'boolean'"


def test_the_format_goes_in_front_so_the_request_stays_the_last_line():
    asked = answer.ask("Can we take core1 down?", SCHEMA)
    assert asked.splitlines()[-1] == "Can we take core1 down?"
    assert asked.startswith("[Answer format:")
    assert answer.ask("x", None) == "x"


def test_a_matching_answer_needs_no_second_turn():
    turns = []
    settled = answer.settle(FakeRun(), result('{"ready": true}'), lambda text: turns.append(text))
    assert settled.structured_response == {"ready": True}
    assert settled.structured_error is None
    assert turns == []


def test_a_broken_answer_gets_one_corrective_turn_counted_in_the_usage():
    run, turns = FakeRun(), []
    settled = answer.settle(
        run, result("yes", tokens=10), lambda text: turns.append(text) or result('{"ready": true}', tokens=20)
    )
    assert settled.structured_response == {"ready": True}
    assert len(turns) == 1
    assert "not JSON" in turns[0]
    assert (settled.usage.input_tokens, settled.usage.api_calls) == (30, 2)
    assert run.stop_reason is None, "the run was not reopened for its corrective turn"


def test_still_broken_after_the_corrective_turn_is_reported_not_passed_off():
    settled = answer.settle(FakeRun(), result("yes"), lambda text: result("still no"))
    assert settled.structured_response is None
    assert settled.response == "still no"
    assert settled.structured_error.startswith("the answer did not match the response schema after one corrective turn")


def test_no_corrective_turn_without_time_or_after_an_unfinished_run():
    turns = []
    out_of_time = answer.settle(FakeRun(left=0), result("yes"), lambda text: turns.append(text))
    assert "no time left" in out_of_time.structured_error
    assert turns == []
    stopped = answer.settle(FakeRun(), result("", stop="run_timeout"), lambda text: turns.append(text))
    assert stopped.structured_error == "the run ended (run_timeout) before an answer"
    assert turns == []
    assert answer.settle(FakeRun(schema=None), result("x"), lambda text: None).structured_error is None
