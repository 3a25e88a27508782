"""Many sessions at once: isolation, per-session ordering, and no resource leaks."""

import concurrent.futures
import json
import uuid

from conftest import Lab, invoke, run

WORKER = "hermes-worker-1"
AGENTS = ("alpha", "beta", "gamma")


LAB = Lab(
    workers={WORKER: {name: {"instructions": f"You are {name.upper()}."} for name in AGENTS}},
    settings={"max_concurrent_runs": 5},
)


def test_ten_concurrent_invokes_across_three_agents_stay_apart(nf, model):
    tokens = [(AGENTS[i % 3], f"token-{i}-{uuid.uuid4().hex[:6]}") for i in range(10)]
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        firsts = list(pool.map(lambda t: invoke(nf, t[0], f"SLEEP 0.5 {t[1]}"), tokens))
        # continue every session concurrently; each must see only its own history
        seconds = list(
            pool.map(lambda p: invoke(nf, p[0][0], f"again {p[0][1]}", p[1]["session_id"]), zip(tokens, firsts))
        )
    assert len({r["session_id"] for r in firsts}) == 10
    for (agent, token), first, second in zip(tokens, firsts, seconds):
        assert first["agent"] == agent
        assert first["stop_reason"] == "completed"
        assert second["response"] == f"ECHO: again {token}"
        assert second["session_id"] == first["session_id"]
        body = next(b for b in model.model.completions() if f"again {token}" in json.dumps(b["messages"][-1]))
        history = json.dumps(body["messages"])
        assert token in history
        assert body["messages"][0]["content"].startswith(f"You are {agent.upper()}")
        others = [t for _, t in tokens if t != token]
        assert not any(other in history for other in others)


def test_turns_of_one_session_run_one_after_the_other(nf, model):
    session_id = invoke(nf, "alpha", "start ordering")["session_id"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        slow = pool.submit(invoke, nf, "alpha", "SLEEP 1.5 slow-one", session_id)
        fast = pool.submit(invoke, nf, "alpha", "fast-two", session_id)
        results = [slow.result(), fast.result()]
    # neither turn interrupted the other, both completed in the same session
    assert [r["stop_reason"] for r in results] == ["completed", "completed"]
    assert {r["session_id"] for r in results} == {session_id}
    assert sorted(r["response"] for r in results) == ["ECHO: fast-two", "SLEPT 1.5"]


def test_fifty_runs_leave_threads_and_open_files_at_baseline(nf):
    def batch(count, label):
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            list(pool.map(lambda i: invoke(nf, AGENTS[i % 3], f"{label} {i}"), range(count)))

    # warm up the same way: thread pools and their per-thread database
    # connections grow to their bound on first use
    batch(50, "warm")
    before = run(nf.client, "get_status")["result"]
    batch(50, "run")
    after = run(nf.client, "get_status")["result"]
    assert after["active_runs"] == []
    # thread pools and their per-thread database connections may still grow by
    # a few; anything held per run would show up fifty times
    assert after["threads"] <= before["threads"] + 5, (before["threads"], after["threads"])
    assert after["open_files"] <= before["open_files"] + 12, (before["open_files"], after["open_files"])
