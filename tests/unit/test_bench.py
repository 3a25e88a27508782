"""
The fault benchmark's pure logic: the generated networks, the scenarios a seed draws, what the
devices print under a fault, the generic investigator over those outputs, and the scorer
(no NorFab: the tools are answered by the device renderer directly).
"""

import fnmatch
import json
from collections import Counter

import pytest

from norfab_hermes.eval.bench.cli import arguments
from norfab_hermes.eval.bench.device import State, interface_commands, render
from norfab_hermes.eval.bench.faults import HEALTHY, KINDS, plan, scenario
from norfab_hermes.eval.bench.investigator import MODELS
from norfab_hermes.eval.bench.lab import TOOLS
from norfab_hermes.eval.bench.scoring import interface_name, score_run, summary
from norfab_hermes.eval.bench.topology import build
from norfab_hermes.eval.models import ToolResult


def tool_result(network, state, call):
    """What the lab's tool would return for ``call``: the NorFab envelope around the rendered outputs."""
    arguments = json.loads(call["arguments"])
    spec = TOOLS[call["name"]]["norfab"]
    if spec["service"] == "lab_records":
        record = network.records["sites"].get(arguments["name"]) or {}
        width = max(map(len, record), default=0) + 2
        text = "\n".join(f"{key:<{width}}{value}" for key, value in record.items())
        return json.dumps({"task": "lab_records.site", "workers": {"records-worker-1": {"result": text}}})
    hosts = arguments.get("FL") or [n.name for n in network.nodes if fnmatch.fnmatch(n.name, arguments.get("FB", ""))]
    commands = [
        c.replace("{{ job_data.interface }}", arguments.get("interface", "")) for c in spec["kwargs"]["commands"]
    ]
    outputs = {host: {command: render(state, host, command) for command in commands} for host in hosts}
    return json.dumps({"task": "nornir.cli", "workers": {"nornir-worker-1": {"result": outputs}}})


def investigate(network, case, model="baseline"):
    """The model's verdict and the tool results it read, each round 30 s after the previous one."""
    decide, results, rounds = MODELS[model](), [], 0
    while True:
        step = decide.next_step("", results, set(TOOLS))
        if "content" in step:
            return json.loads(step["content"]), results
        rounds += 1
        state = State(network, case, elapsed=30 * rounds)
        for call in step["tool_calls"]:
            results.append({"name": call["name"], "content": tool_result(network, state, call), "round": rounds})


def scored(network, case, model="baseline"):
    verdict, results = investigate(network, case, model)
    read = [ToolResult(tool=r["name"], content=r["content"], agent="bench") for r in results]
    devices = [n.name for n in network.nodes]
    return score_run(
        case,
        verdict,
        devices,
        read,
        [{"tool": r["name"], "status": "completed"} for r in results],
        {},
        size=network.size,
        model=model,
    )


@pytest.mark.parametrize("size, devices", [("small", 10), ("medium", 30), ("large", 80)])
def test_sizes_have_the_core_distribution_site_shape(size, devices):
    network = build(size)
    roles = Counter(n.role for n in network.nodes)
    assert len(network.nodes) == devices and roles["core"] == 2
    for dist in (n for n in network.nodes if n.role == "distribution"):
        assert {p.peer for p in dist.ports if p.name.startswith("GigabitEthernet0/")} == {"core1", "core2"}
    assert set(network.records["sites"]) == {n.name for n in network.nodes if n.role == "site"}


def test_the_same_seed_draws_the_same_scenarios_and_another_seed_other_places():
    network = build("medium")
    assert plan(network, 40, 7) == plan(network, 40, 7)
    one, two = plan(network, 40, 7), plan(network, 40, 8)
    assert [(s.fault.device, s.fault.interface) for s in one] != [(s.fault.device, s.fault.interface) for s in two]
    again = scenario(network, one[3].fault.kind, one[3].seed, 3)
    assert again == one[3]  # a scenario replays from its kind and seed alone


@pytest.mark.parametrize("count", [1, 5, 9, 40])
def test_at_least_one_in_five_is_healthy_and_every_kind_is_drawn(count):
    drawn = plan(build("small"), count, 1)
    kinds = Counter(s.fault.kind for s in drawn)
    assert kinds[HEALTHY] >= max(1, count / 5)
    if count == 40:
        assert set(kinds) == set(KINDS) | {HEALTHY} and len(KINDS) >= 8


def test_every_fault_is_placed_on_a_real_device_and_port():
    network = build("large")
    for kind in KINDS:
        for seed in range(20):
            fault = scenario(network, kind, seed).fault
            node = network.node(fault.device)
            assert fault.device in fault.affected
            if fault.interface:
                assert node.port(fault.interface)


def test_a_device_answers_every_command_and_shows_its_fault():
    network = build("small")
    case = next(s for s in (scenario(network, "interface_admin_down", seed) for seed in range(50)))
    state = State(network, case)
    for node in network.nodes:
        for command in interface_commands(network)[:15]:
            assert "Traceback" not in render(state, node.name, command)
    shown = render(state, case.fault.device, f"show interfaces {case.fault.interface}")
    assert "administratively down" in shown


def test_counters_of_a_crc_fault_rise_between_polls_and_old_ones_do_not():
    network = build("small")
    case = scenario(network, "crc_errors", 5)
    first, later = State(network, case, 10), State(network, case, 40)
    assert later.crc(case.fault.device, case.fault.interface) > first.crc(case.fault.device, case.fault.interface)
    for device, port, count in case.noise["old_crc"]:
        assert first.crc(device, port) == later.crc(device, port) == count


@pytest.mark.parametrize("kind", KINDS + [HEALTHY])
def test_the_baseline_finds_each_kind_from_the_device_outputs_alone(kind):
    network = build("small")
    for seed in (1, 2, 3):
        run = scored(network, scenario(network, kind, seed))
        assert bool(run.verdict["fault_found"]) == (kind != HEALTHY)
        if kind != HEALTHY:
            assert run.device_correct and run.kind_correct, (seed, run.truth, run.verdict)
        assert run.fabricated == []  # every line it quotes, a tool returned


def test_always_healthy_scores_recall_zero_and_no_false_positive():
    network = build("small")
    runs = [scored(network, case, "always-healthy") for case in plan(network, 10, 4)]
    totals = summary(runs)
    assert totals["recall"] == 0 and totals["f1"] == 0 and totals["false_positive_rate"] == 0


def test_naming_every_device_earns_no_localization_credit():
    network = build("small")
    runs = [scored(network, case, "every-device") for case in plan(network, 10, 4)]
    totals = summary(runs)
    assert totals["recall"] == 1 and totals["device"] == 0 and totals["interface"] == 0
    assert totals["false_positive_rate"] == 1


def test_the_first_device_is_right_about_as_often_as_chance():
    network = build("medium")
    totals = summary([scored(network, case, "first-device") for case in plan(network, 40, 2)])
    assert totals["device"] <= 0.15  # 1 in 30 devices, give or take the draw
    assert totals["false_positive_rate"] == 1


def test_interface_names_match_long_or_short_and_quotes_no_tool_returned_are_fabricated():
    assert interface_name("Gi0/1") == interface_name("GigabitEthernet0/1") != interface_name("Gi0/2")
    network = build("small")
    case = scenario(network, "crc_errors", 5)
    verdict = {
        "fault_found": True,
        "device": case.fault.device,
        "interface": "Gi" + case.fault.interface[len("GigabitEthernet") :],
        "kind": "crc_errors",
        "affected_devices": [case.fault.device],
        "evidence": [{"line": "GigabitEthernet9/9 0 99999 0 99999"}],
    }
    run = score_run(case, verdict, [n.name for n in network.nodes], [], [], {}, size="small", model="m")
    assert run.device_correct and run.interface_correct and run.kind_correct
    assert run.fabricated == ["GigabitEthernet9/9 0 99999 0 99999"]
    assert score_run(case, {"not": "a verdict"}, [], [], [], {}, size="small", model="m").verdict is None


def test_repeats_are_asked_for_on_the_command_line_and_never_fewer_than_one():
    assert arguments(["--size", "small", "--repeats", "3"]).repeats == 3
    with pytest.raises(SystemExit):
        arguments(["--repeats", "0"])
