"""Client-side routing: worker selectors, agent names and session owners across two hermes workers."""

import pytest
from conftest import TWO_WORKERS, last_job, result_of, start_invoke

from norfab_hermes.routing import Hermes, Router, RoutingError, Target

LAB1, LAB2 = "hermes-lab-1", "hermes-lab-2"


LAB = TWO_WORKERS


@pytest.fixture
def router(nf):
    return Router(nf.client)


@pytest.fixture
def hermes(nf):
    return Hermes(nf.client)


@pytest.mark.parametrize(
    "selector, expected",
    [
        (None, [LAB1, LAB2]),
        ("all", [LAB1, LAB2]),
        ("hermes-lab-*", [LAB1, LAB2]),
        ("hermes-lab-2", [LAB2]),
        (["hermes-lab-?", LAB1], [LAB1, LAB2]),
        ("hermes-lab-2, hermes-lab-1", [LAB1, LAB2]),
    ],
)
def test_selectors_expand_to_alive_hermes_workers(router, selector, expected):
    assert router.select(selector) == expected


def test_selectors_that_match_nothing_are_clear_errors(router):
    with pytest.raises(RoutingError) as error:
        router.select("hermes-core-*")
    assert str(error.value) == (
        "no alive hermes worker matches 'hermes-core-*'; alive hermes workers: hermes-lab-1, hermes-lab-2"
    )
    with pytest.raises(RoutingError) as error:
        router.select("hermes-lab-3")
    assert str(error.value) == (
        "hermes worker 'hermes-lab-3' is not registered with the broker; alive hermes workers: hermes-lab-1, hermes-lab-2"
    )


def test_agent_names_resolve_to_one_worker(router):
    assert router.resolve("bgp") == Target(LAB2, "bgp")
    assert router.resolve("routing", "hermes-lab-*") == Target(LAB1, "routing")
    assert router.resolve("interfaces", LAB2) == Target(LAB2, "interfaces")


def test_an_agent_on_several_workers_needs_workers(router):
    with pytest.raises(RoutingError) as error:
        router.resolve("interfaces")
    assert str(error.value) == (
        "agent 'interfaces' is served by several hermes workers: hermes-lab-1, hermes-lab-2; "
        "choose one with workers, e.g. workers hermes-lab-1"
    )


def test_an_unknown_agent_lists_the_agents_of_each_worker(router):
    with pytest.raises(RoutingError) as error:
        router.resolve("ospf")
    assert str(error.value) == (
        "agent 'ospf' not found; known agents: hermes-lab-1: interfaces, routing; hermes-lab-2: bgp, interfaces"
    )
    with pytest.raises(RoutingError, match="known agents: hermes-lab-1: interfaces, routing$"):
        router.resolve("bgp", LAB1)


def test_invoke_returns_the_envelope_and_a_session_resumes_on_its_worker(nf, hermes):
    first = hermes.invoke("interfaces", "Check [r1] down", workers="hermes-lab-*2")
    assert not first["failed"], first["errors"]
    data = first["result"]
    assert (data["worker"], data["agent"], data["response"]) == (LAB2, "interfaces", "ECHO: Check [r1] down")

    # no workers: each worker serving 'interfaces' is asked who owns the session, only the owner continues it
    again = hermes.invoke("interfaces", "and r2?", session_id=data["session_id"])
    probe = last_job(nf.client, "get_session")
    assert probe["workers_requested"] == [LAB1, LAB2]
    sent = last_job(nf.client, "invoke")
    assert sent["workers_requested"] == [LAB2]
    assert sent["kwargs"] == {"agent": "interfaces", "instructions": "and r2?", "session_id": data["session_id"]}
    assert (again["result"]["worker"], again["result"]["session_id"]) == (LAB2, data["session_id"])
    assert again["result"]["response"] == "ECHO: and r2?"


def test_a_session_is_never_continued_on_another_worker(hermes):
    session_id = hermes.invoke("interfaces", "owned by lab-2", workers=LAB2)["result"]["session_id"]
    # named worker that does not own it: that worker refuses, nothing is re-routed
    res = hermes.invoke("interfaces", "hi", session_id=session_id, workers=LAB1)
    assert res["failed"]
    assert res["errors"] == [f"session '{session_id}' not found for agent 'interfaces' on worker '{LAB1}'"]
    # owner not alive (named, or not found on any alive worker): a routing error
    with pytest.raises(RoutingError, match="hermes worker 'hermes-lab-3' is not registered with the broker"):
        hermes.invoke("interfaces", "hi", session_id=session_id, workers="hermes-lab-3")
    with pytest.raises(RoutingError) as error:
        hermes.invoke("interfaces", "hi", session_id="20990101_000000_gone")
    assert str(error.value) == (
        "session '20990101_000000_gone' of agent 'interfaces' is not on any alive hermes worker serving the agent "
        "(asked hermes-lab-1, hermes-lab-2); sessions resume only on their own worker: if that worker is down, "
        "start it again, or start a new session"
    )


def test_interrupt_finds_the_worker_running_the_turn(nf, hermes):
    future, run_id = start_invoke(nf.client, LAB2, agent="interfaces", instructions="SLEEP 30")
    ack = hermes.interrupt("interfaces", run_id)
    assert ack["result"] == {"run_id": run_id, "agent": "interfaces", "worker": LAB2, "interrupted": True}
    assert result_of(future, LAB2)["result"]["stop_reason"] == "interrupted"
    with pytest.raises(RoutingError, match="run 'nope' is not running on any hermes worker serving agent 'interfaces'"):
        hermes.interrupt("interfaces", "nope")


def test_sessions_session_command_and_fan_outs(hermes):
    session_id = hermes.invoke("bgp", "peer 10.0.0.1?")["result"]["session_id"]
    assert session_id in [s["session_id"] for s in hermes.sessions("bgp")["result"]]
    session = hermes.session("bgp", session_id)["result"]
    assert (session["worker"], [m["role"] for m in session["messages"]]) == (LAB2, ["user", "assistant"])
    usage = hermes.command("bgp", "/usage", session_id=session_id)["result"]
    assert (usage["worker"], usage["session_id"]) == (LAB2, session_id)
    assert "token" in usage["response"].lower()
    assert set(hermes.agents()) == set(hermes.status("hermes-lab-*")) == {LAB1, LAB2}
