"""The scripted model's playbook helpers that read values out of tool results (no NorFab)."""

import json

from norfab_hermes.testing.scenario import Scenario

RECORD = json.dumps(
    {"ok": True, "workers": {"records-worker-1": {"result": "vrf          CUST-A\nattachment   dist1 Gi0/4.210"}}}
)


def reply(say: str, results: list) -> str:
    scenario = Scenario([{"match": "go", "steps": [{"call": "customer_record"}, {"say": say}]}])
    return scenario.next_step("go", results, {"customer_record"})["content"]


def test_find_reads_a_value_out_of_a_tool_result():
    results = [{"name": "customer_record", "content": RECORD, "round": 1}]
    assert reply("{{ find('customer_record', 'attachment\\s+(\\S+)') }}", results) == "dist1"
    assert (
        reply("{{ find('customer_record', '^vrf\\s+\\S+') }}", results) == "vrf          CUST-A"
    )  # no group: the match
    assert reply("[{{ find('customer_record', 'absent (\\S+)') }}]", results) == "[]"


def test_search_reads_a_value_out_of_any_text():
    results = [{"name": "customer_record", "content": "{}", "round": 1}]
    assert reply("{{ search('dist1 loses every path', '(\\S+) loses every path') }}", results) == "dist1"
