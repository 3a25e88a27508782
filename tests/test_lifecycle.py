"""
Worker lifecycle with Hermes inside: restart keeps profiles and sessions,
shutdown does not wait for a turn in flight, and each side keeps its logs.
"""

import json
import os
import threading
import time

from conftest import hermes_worker, norfab, run

WORKER = "hermes-worker-1"


def agents(url):
    return hermes_worker(
        url,
        {
            "alpha": {"instructions": "You are ALPHA.", "hermes": {"model": {"default": "alpha-model"}}},
            "beta": {"instructions": "You are BETA.", "hermes": {"model": {"default": "beta-model"}}},
        },
    )


def test_restart_keeps_profiles_and_their_sessions(model, tmp_path):
    with norfab(tmp_path, {WORKER: agents(model.base_url)}) as nf:
        first = run(nf.client, "invoke", agent="alpha", instructions="remember KIWI")["result"]
        home = run(nf.client, "get_status")["result"]["hermes_home"]
    with norfab(tmp_path, {WORKER: agents(model.base_url)}) as nf:
        status = run(nf.client, "get_status")["result"]
        assert status["hermes_home"] == home
        assert status["agents"] == {"alpha": True, "beta": True}
        again = run(nf.client, "invoke", agent="alpha", instructions="what word?", session_id=first["session_id"])
        assert again["result"]["session_id"] == first["session_id"]
    bodies = [b for b in model.model.completions() if "what word?" in json.dumps(b["messages"][-1])]
    assert bodies
    assert "remember KIWI" in json.dumps(bodies[-1]["messages"])
    # Hermes' own files keep warnings and errors unless the inventory asks for more (hermes_log_level)
    assert not [line for line in open(f"{home}/logs/agent.log") if " INFO " in line]


def test_destroy_during_a_running_turn_is_prompt(model, tmp_path):
    with norfab(tmp_path, {WORKER: agents(model.base_url)}) as nf:
        seen = len(model.model.completions())
        outcome = {}

        def invoke():
            outcome["reply"] = nf.client.run_job(
                "hermes", "invoke", kwargs={"agent": "beta", "instructions": "SLEEP 120"}, workers=WORKER, timeout=150
            )

        caller = threading.Thread(target=invoke, daemon=True)
        caller.start()
        deadline = time.time() + 30
        while len(model.model.completions()) == seen and time.time() < deadline:
            time.sleep(0.1)
        assert len(model.model.completions()) > seen, "the turn never reached the model"
        # the turn holds its model for 120 s: a destroy that waited for it would still be running
        destroyer = threading.Thread(target=nf.destroy, daemon=True)
        destroyer.start()
        destroyer.join(60)
        assert not destroyer.is_alive(), "destroy waited for the turn in flight"


def test_hermes_and_norfab_keep_their_own_logs(model, tmp_path):
    with norfab(tmp_path, {WORKER: {**agents(model.base_url), "hermes_log_level": "INFO"}}) as nf:
        run(nf.client, "invoke", agent="alpha", instructions="log something")
        home = run(nf.client, "get_status")["result"]["hermes_home"]
    hermes_packages = ("agent", "run_agent", "gateway", "hermes_cli", "tools", "cron", "hermes_state", "model_tools")
    records = [json.loads(line) for line in (tmp_path / "__norfab__/logs" / f"worker-{WORKER}.jsonl").open()]
    assert records, "the worker wrote no NorFab log"
    assert any(r["logger"] == "norfab_hermes.worker.host" for r in records)
    leaked = [r for r in records if r["logger"].split(".")[0] in hermes_packages]
    assert not leaked, leaked[:3]

    agent_log = open(f"{home}/logs/agent.log").read()
    assert "gateway.run" in agent_log
    assert "norfab.core" not in agent_log
    assert "norfab_hermes" not in agent_log


def test_a_dotenv_in_the_instance_root_does_not_clobber_the_worker_environment(model, tmp_path, monkeypatch):
    monkeypatch.setenv("NF_TEST_API_KEY", "sk-from-the-worker-environment")
    home = tmp_path / "hermes-home"
    home.mkdir()
    (home / ".env").write_text("NF_TEST_API_KEY=sk-clobbered-by-dotenv\n")
    inventory = hermes_worker(
        model.base_url,
        {
            "alpha": {
                "instructions": "You are ALPHA.",
                "hermes": {"model": {"default": "alpha-model", "api_key_env": "NF_TEST_API_KEY"}},
            }
        },
        hermes_home=str(home),
    )
    with norfab(tmp_path, {WORKER: inventory}) as nf:
        assert run(nf.client, "invoke", agent="alpha", instructions="which key")["result"]["stop_reason"] == "completed"
    used = {r["authorization"] for r in model.model.requests if "which key" in json.dumps(r["body"])}
    assert used == {"Bearer sk-from-the-worker-environment"}


def test_hermes_console_output_stays_off_the_operators_terminal(model, tmp_path, capfd):
    # nfcli runs workers in its own process group, sharing the operator's terminal
    with norfab(tmp_path, {WORKER: agents(model.base_url)}) as nf:
        run(nf.client, "invoke", agent="alpha", instructions="SLEEP 1")
        home = run(nf.client, "get_status")["result"]["hermes_home"]
    terminal = capfd.readouterr().out
    # Hermes' spinners ("(◔_◔) deliberating... (0.5s)") go to the instance root
    assert os.path.isfile(f"{home}/logs/console.log")
    assert "deliberating" not in terminal
    assert "(0." not in terminal


def test_invalid_worker_inventory_fails_readiness_without_hanging_norfab(model, tmp_path):
    inventory = {**agents(model.base_url), "max_concurent_runs": 2}  # misspelt key
    with norfab(tmp_path, {WORKER: inventory}) as nf:
        status = run(nf.client, "get_status")["result"]
        assert status["ready"] is False
        assert "hermes inventory: unknown key 'max_concurent_runs'" in status["errors"][0]
        res = run(nf.client, "invoke", agent="alpha", instructions="hi")
        assert res["failed"]
        assert f"worker '{WORKER}' failed to start" in res["errors"][0]
