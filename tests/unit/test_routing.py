"""Client-side routing with a fake NorFab client: worker selectors, agents, sessions, runs and approvals."""

import pytest

from norfab_hermes.errors import InvalidRequest, UnknownApproval, failure
from norfab_hermes.routing import (
    INVOKE_JOB_TIMEOUT,
    JOB_MARGIN,
    Hermes,
    Router,
    RoutingError,
    Target,
    invoke_job_timeout,
)
from norfab_hermes.routing.records import one_per_record

from .fakes import FakeClient, FakeWorker, unknown_here

LAB1, LAB2, CORE = "hermes-lab-1", "hermes-lab-2", "hermes-core-1"


def lab(**changes: FakeWorker) -> FakeClient:
    """Two alive lab workers sharing 'interfaces', and a dead core worker."""
    workers = {
        LAB1: FakeWorker(agents=["interfaces", "routing"]),
        LAB2: FakeWorker(agents=["interfaces", "bgp"]),
        CORE: FakeWorker(agents=["core"], status="dead"),
    }
    return FakeClient({**workers, **changes})


@pytest.mark.parametrize(
    "selector, expected",
    [
        (None, [LAB1, LAB2]),
        ("all", [LAB1, LAB2]),
        ("any", [LAB1, LAB2]),
        ("", [LAB1, LAB2]),
        ("hermes-*", [LAB1, LAB2]),
        ("hermes-lab-?", [LAB1, LAB2]),
        ("hermes-lab-[2]", [LAB2]),
        (LAB2, [LAB2]),
        (f" {LAB2} , {LAB1} ", [LAB1, LAB2]),
        ([LAB2, "hermes-lab-*"], [LAB1, LAB2]),
        (("hermes-lab-2,hermes-lab-2",), [LAB2]),
    ],
)
def test_selectors_expand_to_sorted_alive_workers(selector, expected):
    """None, all, any, names, globs, comma lists and lists expand to the alive hermes workers they match, once each."""
    assert Router(lab()).select(selector) == expected


def test_a_glob_never_selects_a_dead_worker():
    """A glob matching only dead workers is an error naming the alive ones."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).select("hermes-core-*")
    assert (
        str(error.value)
        == "no alive hermes worker matches 'hermes-core-*'; alive hermes workers: hermes-lab-1, hermes-lab-2"
    )


def test_a_dead_worker_named_says_it_is_dead():
    """Naming a worker the broker lists as dead says so, with the alive workers."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).select(CORE)
    assert str(error.value) == "hermes worker 'hermes-core-1' is dead; alive hermes workers: hermes-lab-1, hermes-lab-2"


def test_an_unregistered_worker_named_says_so():
    """Naming a worker the broker does not know says it is not registered."""
    with pytest.raises(RoutingError, match="^hermes worker 'hermes-lab-3' is not registered with the broker; "):
        Router(lab()).select([LAB1, "hermes-lab-3"])


def test_no_alive_worker_is_an_error_even_for_all():
    """With every hermes worker down, even 'all' is an error that says where to look."""
    client = FakeClient({CORE: FakeWorker(status="dead")})
    with pytest.raises(RoutingError, match="^no hermes workers are alive; check 'show workers'"):
        Router(client).select("all")


def test_a_broker_error_is_a_routing_error_with_its_message():
    """A broker that cannot list workers gives a RoutingError carrying the broker's errors."""
    client = FakeClient({LAB1: FakeWorker()}, broker_errors=["broker busy", "try again"])
    with pytest.raises(RoutingError) as error:
        Router(client).workers()
    assert str(error.value) == "could not list hermes workers from the broker: broker busy; try again"


def test_an_agent_served_by_one_selected_worker_resolves_there():
    """An agent served by one of the selected workers resolves to that worker."""
    router = Router(lab())
    assert router.resolve("bgp") == Target(LAB2, "bgp")
    assert router.resolve("routing", "hermes-lab-*") == Target(LAB1, "routing")
    assert router.resolve("interfaces", LAB2) == Target(LAB2, "interfaces")


def test_get_agents_goes_only_to_the_selected_workers():
    """Resolving an agent asks get_agents of the selected alive workers only."""
    client = lab()
    Router(client).resolve("interfaces", LAB2)
    assert client.tasks("get_agents") == [[LAB2]]


def test_an_agent_on_several_workers_asks_for_a_worker():
    """An agent served by several selected workers is an error listing them and the fix."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).resolve("interfaces")
    assert str(error.value) == (
        "agent 'interfaces' is served by several hermes workers: hermes-lab-1, hermes-lab-2; "
        "choose one with workers, e.g. workers hermes-lab-1"
    )


def test_an_unknown_agent_lists_every_asked_workers_agents_and_the_dead_ones():
    """An unknown agent lists the agents of each worker asked and names the workers that are down."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).resolve("ospf")
    assert str(error.value) == (
        "agent 'ospf' not found; known agents: hermes-lab-1: interfaces, routing; hermes-lab-2: bgp, interfaces; "
        "hermes workers that are down, whose agents are not listed: hermes-core-1"
    )


def test_a_worker_that_fails_get_agents_is_named_as_unreachable():
    """A worker whose get_agents fails is listed with its error, not silently skipped."""
    client = lab(**{LAB2: FakeWorker(agents=["bgp"], broken="inventory unreadable")})
    with pytest.raises(RoutingError) as error:
        Router(client).resolve("bgp")
    message = str(error.value)
    assert message.startswith("agent 'bgp' not found; known agents: hermes-lab-1: interfaces, routing; ")
    assert "workers that did not answer: hermes-lab-2 (inventory unreadable)" in message


def test_a_worker_gone_from_the_broker_mid_job_leaves_the_others_answering():
    """NorFab fails a fan-out job when one of its workers left the broker: each is then asked alone,
    the live one answers and the gone one is named with what to check."""
    client = lab(**{LAB2: FakeWorker(agents=["bgp"], gone=True)})
    assert Router(client).resolve("routing") == Target(LAB1, "routing")
    assert client.tasks("get_agents") == [[LAB1, LAB2], [LAB1], [LAB2]]
    with pytest.raises(RoutingError) as error:
        Router(client).resolve("bgp")
    assert "hermes-lab-2 (hermes worker 'hermes-lab-2' did not answer get_agents: it left the broker;" in str(
        error.value
    )


def test_a_session_resumes_on_the_one_worker_that_owns_it():
    """A session of an agent on several workers goes to the worker whose get_session knows it."""
    client = lab(**{LAB2: FakeWorker(agents=["interfaces", "bgp"], sessions={("interfaces", "s-2")})})
    assert Router(client).resolve("interfaces", session_id="s-2") == Target(LAB2, "interfaces")
    assert client.tasks("get_session") == [[LAB1, LAB2]]


def test_a_session_on_a_named_worker_is_left_to_that_worker():
    """With one worker named, the session goes there unasked: that worker checks it itself."""
    client = lab()
    assert Router(client).resolve("interfaces", LAB1, session_id="s-x") == Target(LAB1, "interfaces")
    assert client.tasks("get_session") == []


def test_a_session_no_alive_worker_owns_is_never_continued_elsewhere():
    """A session no alive worker owns is an error that says sessions resume only on their own worker."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).resolve("interfaces", session_id="s-gone")
    assert str(error.value) == (
        "session 's-gone' of agent 'interfaces' is not on any alive hermes worker serving the agent "
        "(asked hermes-lab-1, hermes-lab-2); sessions resume only on their own worker: if that worker is down, "
        "start it again, or start a new session"
    )


def test_a_session_owned_twice_asks_for_a_worker():
    """A session id two workers both know is an error naming both."""
    client = lab(
        **{
            LAB1: FakeWorker(agents=["interfaces"], sessions={("interfaces", "s-1")}),
            LAB2: FakeWorker(agents=["interfaces"], sessions={("interfaces", "s-1")}),
        }
    )
    with pytest.raises(RoutingError, match="exists on several workers: hermes-lab-1, hermes-lab-2; choose one"):
        Router(client).resolve("interfaces", session_id="s-1")


def test_a_session_last_answered_by_a_dead_worker_names_that_worker():
    """When the client's job store says a dead worker ran the session last, the error names that worker."""
    client = lab(**{CORE: FakeWorker(agents=["interfaces"], status="dead")})
    answered = {"result": {"session_id": "s-core", "agent": "interfaces"}}
    client.job_db.invokes = [
        {"result_data": {LAB1: {"result": {"session_id": "other"}}}},
        {"result_data": {CORE: answered}},
    ]
    with pytest.raises(RoutingError) as error:
        Router(client).resolve("interfaces", session_id="s-core")
    assert str(error.value).endswith(
        "; session 's-core' belongs to hermes worker 'hermes-core-1' (it answered it last), which is not alive: "
        "start that worker again, sessions resume only on their own worker"
    )


def test_a_run_is_interrupted_on_the_worker_running_it():
    """interrupt goes to the worker whose get_status lists the run among its active runs."""
    client = lab(**{LAB2: FakeWorker(agents=["interfaces"], active_runs={("interfaces", "r-9")})})
    Hermes(client).interrupt("interfaces", "r-9")
    assert client.jobs[-1] == ("interrupt", [LAB2], {"agent": "interfaces", "run_id": "r-9"})


def test_a_run_no_worker_is_running_goes_to_the_only_worker_serving_the_agent():
    """A run not active anywhere goes to the one worker serving the agent, which says whether it finished."""
    assert Router(lab()).run_owner("bgp", "r-old") == Target(LAB2, "bgp")


def test_a_run_not_running_on_any_of_several_workers_is_an_error():
    """A run active on none of several workers serving the agent is an error naming the workers asked."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).run_owner("interfaces", "r-old")
    assert str(error.value) == (
        "run 'r-old' is not running on any hermes worker serving agent 'interfaces' (asked hermes-lab-1, hermes-lab-2)"
    )


def test_get_run_answers_from_the_worker_that_knows_the_run():
    """get_run asks every worker serving the agent and returns the answer of the one that knows the run."""
    client = lab(**{LAB1: FakeWorker(agents=["interfaces"], runs={"r-1"})})
    target, result = Router(client).run_state("interfaces", "r-1")
    assert target == Target(LAB1, "interfaces")
    assert result["result"] == {"run_id": "r-1", "state": "finished"}


def test_get_run_unknown_everywhere_is_an_error():
    """A run id no worker serving the agent knows is an error saying how long runs are kept."""
    with pytest.raises(
        RoutingError, match="is not known on any hermes worker serving the agent .*keeps its runs' records"
    ):
        Router(lab()).run_state("interfaces", "r-nowhere")


def test_get_run_of_a_single_worker_returns_its_own_answer():
    """With one worker serving the agent, its own answer comes back, also when it does not know the run."""
    target, result = Router(lab()).run_state("bgp", "r-nowhere")
    assert target == Target(LAB2, "bgp")
    assert result["failed"] is True
    assert result["errors"] == ["run 'r-nowhere' is not known on worker 'hermes-lab-2'"]


def test_an_approval_is_decided_by_the_worker_that_knows_it():
    """approve goes to every selected worker; only the answer of the one that knows the id is returned."""
    client = lab(**{LAB2: FakeWorker(agents=["bgp"], approvals={"a-1"})})
    owners = Router(client).decide("approve", "a-1", note="ok by me")
    assert list(owners) == [LAB2]
    assert owners[LAB2]["result"] == {"approval_id": "a-1", "decision": "approve"}
    assert client.jobs[-1] == ("approve", [LAB1, LAB2], {"approval_id": "a-1", "note": "ok by me"})


def test_a_refusal_with_another_code_is_that_workers_own_answer():
    """Only 'not this worker's' codes mean keep looking: another failure is the owner's answer, returned as is."""
    client = lab(**{LAB2: FakeWorker(agents=["bgp"])})
    refusal = failure("approval 'a-1' was already decided", InvalidRequest.code)
    client.answer = lambda name, task, kwargs: (
        refusal if name == LAB2 else unknown_here(UnknownApproval, "approval", "a-1", name)
    )
    assert Router(client).decide("approve", "a-1") == {LAB2: refusal}


def test_an_approval_nobody_knows_is_an_error():
    """An approval id unknown on every selected worker is an error pointing at 'hermes approvals'."""
    with pytest.raises(RoutingError) as error:
        Router(lab()).decide("deny", "a-404")
    assert str(error.value) == (
        "approval 'a-404' is not known on any hermes worker (asked hermes-lab-1, hermes-lab-2); "
        "see the pending ones with 'hermes approvals'"
    )


def test_invoke_sends_the_run_budget_and_waits_a_margin_longer():
    """Hermes.invoke runs on the resolved worker with the run budget and a job timeout above it."""
    client = lab()
    reply = Hermes(client).invoke("bgp", "check peers", timeout=45)
    assert reply["result"]["worker"] == LAB2
    assert client.jobs[-1] == (
        "invoke",
        [LAB2],
        {"agent": "bgp", "instructions": "check peers", "session_id": None, "run_timeout": 45},
    )


def test_the_invoke_job_timeout_outlasts_the_run_budget():
    """The NorFab job waits the run budget plus a margin, or NorFab's default without a budget."""
    assert invoke_job_timeout(45) == 45 + JOB_MARGIN
    assert invoke_job_timeout(None) == INVOKE_JOB_TIMEOUT
    assert INVOKE_JOB_TIMEOUT > 300  # above the default run_timeout of an agent


def test_workers_sharing_one_record_answer_once():
    """Replies naming one shared record count once (the first worker's); a worker's own record always counts."""
    shared = {"failed": False, "result": {"runs": [], "record": "rec-1"}}
    own = {"failed": False, "result": {"runs": []}}
    down = {"failed": True, "errors": ["no answer"], "result": {"code": "records_unavailable"}}
    kept = one_per_record({"w2": shared, "w1": shared, "w3": own, "w4": down})
    assert sorted(kept) == ["w1", "w3", "w4"]
