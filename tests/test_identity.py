"""
Who is asking, end to end: operators with SSH keys made here by ssh-keygen,
a hermes worker whose inventory names them (an nf:// file, reloaded without a
restart), and every door tried as an attacker would, each checked on its side
effect: the approval still pending, no job on the nornir worker, an audit entry.
"""

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import hermes_shell, hermes_worker, network, network_jobs, norfab, ok, run
from test_shell import nfcli

from norfab_hermes.identity import fingerprint, mint
from norfab_hermes.identity.audit import canonical
from norfab_hermes.identity.client import KEY_ENV
from norfab_hermes.identity.signatures import KeyFileSigner
from norfab_hermes.nfcli.records import export
from norfab_hermes.routing import Hermes, Router
from norfab_hermes.testing.embedded import worker_process
from norfab_hermes.worker.records.audit import entry_hash

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
BOUNCE = {
    "input_schema": FB,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}
FIXER = {"instructions": "You fix.", "toolsets": ["norfab"], "tools": {"bounce": BOUNCE}, "approval_timeout": 120}
AGENTS = {"fixer": FIXER, "spare": FIXER, "twice": {**FIXER, "approvals_required": 2}}  # a run at a time each
ROLES = {
    "alice": {"*": ["operator", "approver", "admin"]},
    "bob": {"*": ["operator", "approver"]},
    "carol": {"twice": ["approver"], "f*": ["viewer"]},
    "vera": {"*": ["viewer"]},
}
CALL = 'CALL bounce {"FB": "r1"}'
FIELDS = ("time", "worker", "kind", "agent", "run_id", "actor")
CUT = "c0ffee00c0ffee00c0ffee00c0ffee00"  # the job UUID of a change fixer's run had in flight when its worker died
CUT_CHANGE = {
    "outcome_id": CUT,
    "job_uuid": CUT,
    "run_id": "run-cut",
    "agent": "fixer",
    "worker": WORKER,
    "tool": "bounce",
    "target": "nornir.cfg workers all",
    "devices": ["r9"],
    "started": "2026-12-01T09:00:00.000+00:00",
    "reason": "in flight",
}


def keygen(directory: Path, name: str, kind: str) -> KeyFileSigner:
    extra = ["-b", "256"] if kind == "ecdsa" else []
    path = directory / name
    subprocess.run(["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", name, "-f", str(path)], check=True)
    return KeyFileSigner.load(path)


def operators_file(keys: dict, names) -> str:
    return yaml.safe_dump(
        {n: {"keys": [keys[n].path.with_suffix(".pub").read_text()], "roles": ROLES[n]} for n in names}
    )


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    directory = tmp_path_factory.mktemp("keys")
    kinds = {"alice": "ed25519", "bob": "ecdsa", "carol": "ed25519", "vera": "ed25519", "mallory": "ed25519"}
    return {name: keygen(directory, name, kind) for name, kind in kinds.items()}


@pytest.fixture(scope="module")
def lab(model, keys, tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    # a call parked in the inbox holds its target's tool slot: room for the next run's call
    worker = hermes_worker(model.base_url, AGENTS, operators="nf://operators.yaml", tool_concurrency_per_worker=4)
    workers, files = network(["r1"], users={WORKER: worker})
    files["operators.yaml"] = operators_file(keys, ROLES)
    # what a worker killed mid-change leaves: a marker of fixer's change job, an unknown outcome once it starts
    marker = base / f"__norfab__/files/worker/{WORKER}/hermes/norfab_changes/in_flight/{CUT}.json"
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps(CUT_CHANGE))
    with norfab(base, workers, files) as nf:
        clients = {name: nf.make_client(name=f"{name}-laptop") for name in keys}
        yield nf, base, clients
        for client in clients.values():
            client.destroy()


def signed(client, signer, task, subject=None, lifetime=120.0, **kwargs):
    """``task`` sent by ``client`` with a proof made by ``signer`` for exactly these arguments."""
    proof = mint(signer, task, [WORKER], kwargs, client.name, subject, lifetime)
    return run(client, task, WORKER, proof=proof, **kwargs)


def refused(res, text):
    assert res["failed"] and res["result"]["code"] == "not_allowed", res
    assert text in res["errors"][0], res["errors"]


def shows_users(base):
    return len([k for _, k in network_jobs(base) if k.get("commands") == ["show users"]])


def pending(lab, keys, agent):
    """A run of ``agent`` started by alice, waiting in the inbox: its approval."""
    nf, _, clients = lab
    started = ok(signed(clients["alice"], keys["alice"], "start_run", agent=agent, instructions=CALL))
    deadline = time.time() + 60
    while time.time() < deadline:
        state = ok(signed(clients["alice"], keys["alice"], "get_run", agent=agent, run_id=started["run_id"]))
        if state["approvals"]:
            return state["approvals"][0]
        time.sleep(0.2)
    raise AssertionError(f"run {started['run_id']} never asked for approval: {state}")


def still_pending(lab, keys, approval_id):
    nf, _, clients = lab
    approvals = ok(signed(clients["vera"], keys["vera"], "get_approvals"))
    return any(a["approval_id"] == approval_id and a["state"] == "pending" for a in approvals)


def audit(lab, keys, kind):
    _, _, clients = lab
    return ok(signed(clients["vera"], keys["vera"], "get_audit", kind=kind, limit=200))["entries"]


def test_status_says_who_may_act_and_version_stays_open(lab, keys):
    nf, _, clients = lab
    assert ok(run(clients["mallory"], "get_version", WORKER))["norfab-hermes"]
    line = ok(signed(clients["vera"], keys["vera"], "get_status"))["identity"]
    assert line.startswith("requests must be signed by an operator's SSH key (4: alice, bob, carol, vera)")


def test_a_client_named_after_an_approver_without_the_key_is_refused_and_nothing_runs(lab, keys):
    nf, base, clients = lab
    approval = pending(lab, keys, "fixer")
    before = shows_users(base)
    bob_name_only = nf.make_client(name="bob")  # calls itself after the approver
    try:
        refused(run(bob_name_only, "approve", WORKER, approval_id=approval["approval_id"]), "approve needs a proof")
    finally:
        bob_name_only.destroy()
    digest = approval["change_digest"] or approval["arguments_digest"]
    res = signed(clients["mallory"], keys["mallory"], "approve", digest, approval_id=approval["approval_id"])
    refused(res, "which no operator of worker 'hermes-worker-1' holds")
    time.sleep(1)
    assert still_pending(lab, keys, approval["approval_id"]) and shows_users(base) == before
    reasons = [e["data"]["reason"] for e in audit(lab, keys, "request.refused")]
    assert any("approve needs a proof" in r for r in reasons) and any("no operator" in r for r in reasons)
    # the requester may not approve its own change (four eyes) ...
    res = signed(clients["alice"], keys["alice"], "approve", digest, approval_id=approval["approval_id"])
    refused(res, "may not approve its own change (four eyes)")
    assert still_pending(lab, keys, approval["approval_id"]) and shows_users(base) == before
    # ... a second operator's approval runs it, and the record names bob, verified
    decided = ok(signed(clients["bob"], keys["bob"], "approve", digest, approval_id=approval["approval_id"]))
    assert (decided["state"], decided["decided_by"]) == ("approved", "bob")
    deadline = time.time() + 30
    while shows_users(base) == before and time.time() < deadline:
        time.sleep(0.2)
    assert shows_users(base) == before + 1
    # the tool job names, in the nornir worker's own job store, the run, its agent and its operator
    with sqlite3.connect(base / "__norfab__/files/worker/nornir-worker-1/nornir-worker-1.db") as db:
        [(uuid, client)] = db.execute(
            "SELECT uuid, client_address FROM jobs WHERE uuid LIKE ?", (f"{approval['run_id']}.%",)
        ).fetchall()
    assert uuid.startswith(f"{approval['run_id']}.fixer.alice.") and client.startswith(WORKER), (uuid, client)


def test_replayed_other_arguments_expired_and_other_digest_proofs_are_refused(lab, keys):
    nf, base, clients = lab
    approval = pending(lab, keys, "fixer")
    approval_id, digest = approval["approval_id"], approval["change_digest"] or approval["arguments_digest"]
    before = shows_users(base)
    bob, key = clients["bob"], keys["bob"]
    # a proof for another approval's decision, sent for this one: other arguments
    other = mint(key, "approve", [WORKER], {"approval_id": "0" * 12}, bob.name, digest)
    refused(run(bob, "approve", WORKER, approval_id=approval_id, proof=other), "other arguments")
    expired = mint(key, "approve", [WORKER], {"approval_id": approval_id}, bob.name, digest, lifetime=-1)
    refused(run(bob, "approve", WORKER, approval_id=approval_id, proof=expired), "expired")
    # signed for this approval's id but another change's digest
    refused(signed(bob, key, "approve", "0" * 12, approval_id=approval_id), "the proof of this decision signs digest")
    assert still_pending(lab, keys, approval_id)
    proof = mint(key, "deny", [WORKER], {"approval_id": approval_id}, bob.name, digest)
    assert ok(run(bob, "deny", WORKER, approval_id=approval_id, proof=proof))["state"] == "denied"
    refused(run(bob, "deny", WORKER, approval_id=approval_id, proof=proof), "used already (replayed)")
    time.sleep(1)
    assert shows_users(base) == before
    reasons = [e["data"]["reason"] for e in audit(lab, keys, "request.refused")]
    assert any("other arguments" in r for r in reasons) and any("replayed" in r for r in reasons)


def test_roles_a_viewer_may_not_invoke_an_operator_may_not_create_an_agent(lab, keys):
    nf, _, clients = lab
    res = signed(clients["vera"], keys["vera"], "invoke", agent="fixer", instructions="hello")
    refused(res, "operator 'vera' may not invoke: it needs role operator for agent 'fixer'")
    definition = {"instructions": "You are new."}
    res = signed(clients["bob"], keys["bob"], "manage_agent", agent="newbie", action="create", definition=definition)
    refused(res, "operator 'bob' may not manage_agent: it needs role admin")
    agents = [a["name"] for a in ok(signed(clients["vera"], keys["vera"], "get_agents"))]
    assert "newbie" not in agents
    tasks = [e["data"]["task"] for e in audit(lab, keys, "request.refused")]
    assert "invoke" in tasks and "manage_agent" in tasks


def test_approvals_required_two_needs_two_different_operators(lab, keys):
    nf, base, clients = lab
    approval = pending(lab, keys, "twice")
    digest = approval["change_digest"] or approval["arguments_digest"]
    [listed] = [a for a in ok(signed(clients["vera"], keys["vera"], "get_approvals", agent="twice"))]
    assert (listed["approvals_required"], listed["requested_by"], listed["may_decide"]) == (
        2,
        "alice",
        ["bob", "carol"],
    )
    before = shows_users(base)
    first = ok(signed(clients["bob"], keys["bob"], "approve", digest, approval_id=approval["approval_id"]))
    assert (first["state"], first["approved_by"], first["may_decide"]) == ("pending", ["bob"], ["carol"])
    res = signed(clients["bob"], keys["bob"], "approve", digest, approval_id=approval["approval_id"])
    refused(res, "approved 'approval_id' already".replace("approval_id", approval["approval_id"]))
    time.sleep(1)
    assert shows_users(base) == before
    second = ok(signed(clients["carol"], keys["carol"], "approve", digest, approval_id=approval["approval_id"]))
    assert (second["state"], second["decided_by"]) == ("approved", "carol")
    deadline = time.time() + 30
    while shows_users(base) == before and time.time() < deadline:
        time.sleep(0.2)
    assert shows_users(base) == before + 1


def test_the_python_client_signs_an_invoke_and_an_approval(lab, keys):
    nf, base, clients = lab
    alice, bob = Hermes(clients["alice"], signer=keys["alice"]), Hermes(clients["bob"], signer=keys["bob"])
    reply = alice.invoke("fixer", "hello")
    assert not reply["failed"] and reply["result"]["response"] == "ECHO: hello", reply
    approval = pending(lab, keys, "fixer")
    [answer] = bob.approve(approval["approval_id"], note="CHG-9").values()
    assert (ok(answer)["state"], ok(answer)["decided_by"]) == ("approved", "bob")
    refused(Hermes(clients["bob"], signer=None).agents(WORKER)[WORKER], "get_agents needs a proof")


def test_a_removed_key_stops_working_after_a_reload(lab, keys):
    nf, base, clients = lab
    ok(signed(clients["carol"], keys["carol"], "get_status"))
    (base / "operators.yaml").write_text(operators_file(keys, ["alice", "bob", "vera"]))
    try:
        reloaded = ok(signed(clients["alice"], keys["alice"], "reload_operators"))
        assert sorted(reloaded["operators"]) == ["alice", "bob", "vera"]
        refused(signed(clients["carol"], keys["carol"], "get_status"), "which no operator of worker")
    finally:
        (base / "operators.yaml").write_text(operators_file(keys, ROLES))
        ok(signed(clients["alice"], keys["alice"], "reload_operators"))


def verify_offline(*args):
    return subprocess.run(
        [sys.executable, "-m", "norfab_hermes.identity", "verify-audit", *map(str, args)],
        capture_output=True,
        text=True,
    )


def test_an_exported_audit_log_is_checked_offline_and_an_edited_signature_is_named(lab, keys, tmp_path):
    nf, base, clients = lab
    ok(signed(clients["alice"], keys["alice"], "invoke", agent="spare", instructions="for the record"))
    exported = tmp_path / "hermes-audit.jsonl"
    export(Router(clients["vera"], signer=keys["vera"]), WORKER, {}, exported)  # nf# hermes audit export file ...
    lines = exported.read_text().splitlines()
    checked = verify_offline(exported, "--operators", base / "operators.yaml")
    assert checked.returncode == 0 and f"{len(lines)} entries, intact" in checked.stdout, checked
    # alice's run, its signature swapped for mallory's over the same claim, the hashes left as they were
    at = next(n for n, line in enumerate(lines) if '"run.started"' in line and "for the record" in line)
    entry = json.loads(lines[at])
    entry["data"]["signed"]["signature"] = keys["mallory"].sign(entry["data"]["signed"]["claim"].encode())
    lines[at] = json.dumps(entry)
    exported.write_text("\n".join(lines) + "\n")
    checked = verify_offline(exported, "--operators", base / "operators.yaml")
    seq = entry["seq"]
    assert checked.returncode == 1, checked
    assert f"entry {seq} was edited: its hash does not match its content" in checked.stdout
    assert f"entry {seq}: signed by key {fingerprint(keys['mallory'].public_blob)}, not the" in checked.stdout
    # rehashed too (an intruder who rebuilds the chain of the file): the signature still names it
    entry["hash"] = entry_hash(entry["prev"], seq, *[entry[k] for k in FIELDS], canonical(entry["data"]))
    lines[at] = json.dumps(entry)
    exported.write_text("\n".join(lines[: at + 1]) + "\n")
    checked = verify_offline(exported, "--operators", base / "operators.yaml")
    assert checked.returncode == 1 and checked.stdout.splitlines()[0].startswith(f"entry {seq}: signed by key")


def test_audit_entries_keep_the_signature_and_verify_audit_names_a_forged_one(lab, keys):
    nf, _, clients = lab
    decided = [e for e in audit(lab, keys, "approval.decided") if e["actor"] == "bob"]
    assert decided, "no decision by bob was audited"
    kept = decided[0]["data"]["signed"]
    assert (
        kept["operator"] == "bob" and kept["fingerprint"].startswith("SHA256:") and "SSH SIGNATURE" in kept["signature"]
    )
    assert ok(signed(clients["vera"], keys["vera"], "verify_audit"))["ok"]

    # an attacker who can write the file re-signs bob's claim with a key of its own and rebuilds the chain
    status = ok(signed(clients["vera"], keys["vera"], "get_status"))
    db = sqlite3.connect(Path(status["hermes_home"]) / "norfab_records.db")
    seq = decided[0]["seq"]
    data = json.loads(db.execute("SELECT data FROM audit WHERE seq = ?", (seq,)).fetchone()[0])
    data["signed"]["signature"] = keys["mallory"].sign(data["signed"]["claim"].encode())
    db.execute(
        "UPDATE audit SET data = ? WHERE seq = ?", (json.dumps(data, sort_keys=True, separators=(",", ":")), seq)
    )
    rows = db.execute(
        "SELECT seq, time, worker, kind, agent, run_id, actor, data, prev FROM audit WHERE seq >= ? ORDER BY seq",
        (seq,),
    ).fetchall()
    prev = rows[0][8]
    for row in rows:
        digest = entry_hash(prev, *row[:8])
        db.execute("UPDATE audit SET prev = ?, hash = ? WHERE seq = ?", (prev, digest, row[0]))
        prev = digest
    db.execute("UPDATE audit_anchor SET hash = ? WHERE name = 'head'", (prev,))
    db.commit()
    db.close()
    checked = ok(signed(clients["vera"], keys["vera"], "verify_audit"))
    assert not checked["ok"]
    assert any(p.startswith(f"entry {seq}: signed by key") for p in checked["problems"]), checked["problems"]


def test_an_approver_of_another_agent_may_not_acknowledge_an_outcome_and_nothing_is_acknowledged(lab, keys):
    nf, _, clients = lab

    def unknown():
        return ok(signed(clients["vera"], keys["vera"], "get_status"))["changes"]["outcome_unknown"]

    assert [u["outcome_id"] for u in unknown()] == [CUT]
    # carol approves for agent 'twice' only; the outcome is fixer's, whatever agent the request names
    res = signed(clients["carol"], keys["carol"], "acknowledge_outcome", outcome_id=CUT, note="looked fine")
    refused(res, "operator 'carol' may not acknowledge the change of unknown outcome")
    assert "needs role approver for agent 'fixer'" in res["errors"][0]
    res = signed(clients["vera"], keys["vera"], "acknowledge_outcome", outcome_id=CUT)
    refused(res, "operator 'vera' may not acknowledge_outcome: it needs role approver")
    assert [u["outcome_id"] for u in unknown()] == [CUT] and unknown()[0]["acknowledged"] is None
    assert not audit(lab, keys, "change.acknowledged")
    assert [e["actor"] for e in audit(lab, keys, "approval.refused") if e["agent"] == "fixer"][-1] == "carol"
    # an approver of fixer acknowledges it
    done = ok(signed(clients["bob"], keys["bob"], "acknowledge_outcome", outcome_id=CUT, note="r9 checked"))
    assert (done["acknowledged_by"], done["note"]) == ("bob", "r9 checked") and not unknown()
    [entry] = audit(lab, keys, "change.acknowledged")
    assert entry["actor"] == "bob" and entry["data"]["signed"]["operator"] == "bob"


def test_a_proof_replayed_after_the_worker_restarts_is_refused_and_nothing_runs(model, keys, tmp_path):
    alice = {"keys": [keys["alice"].path.with_suffix(".pub").read_text()], "roles": {"*": ["operator"]}}
    worker = hermes_worker(model.base_url, {"echo": {"instructions": "You echo."}}, operators={"alice": alice})
    with norfab(tmp_path, {WORKER: worker}, {}, separate=(WORKER,)) as nf:
        laptop = nf.make_client(name="alice-laptop")
        try:
            kwargs = {"agent": "echo", "instructions": "once only"}
            proof = mint(keys["alice"], "invoke", [WORKER], kwargs, laptop.name)
            listing = mint(keys["alice"], "get_runs", [WORKER], {"agent": "echo"}, laptop.name)
            with worker_process(nf, WORKER):
                assert ok(run(laptop, "invoke", WORKER, proof=proof, **kwargs))["response"] == "ECHO: once only"
                refused(run(laptop, "invoke", WORKER, proof=proof, **kwargs), "used already (replayed)")
            # a restart within the proof's lifetime: the worker's records still hold its nonce
            with worker_process(nf, WORKER):
                refused(run(laptop, "invoke", WORKER, proof=proof, **kwargs), "used already (replayed)")
                runs = ok(run(laptop, "get_runs", WORKER, proof=listing, agent="echo"))["runs"]
                assert [r["instructions"] for r in runs] == ["once only"], "the replay ran nothing"
                status = mint(keys["alice"], "get_status", [WORKER], {}, laptop.name)
                home = Path(ok(run(laptop, "get_status", WORKER, proof=status))["hermes_home"])
            with sqlite3.connect(home / "norfab_records.db") as db:
                kept = db.execute("SELECT worker, expires FROM proof_nonces").fetchall()
            assert len(kept) == 3 and all(w == WORKER and e > time.time() for w, e in kept), kept
        finally:
            laptop.destroy()


def test_the_shell_signs_an_invoke_and_an_approval_with_the_configured_key(lab, keys, monkeypatch):
    nf, base, clients = lab
    with hermes_shell(nf) as app:
        monkeypatch.delenv(KEY_ENV, raising=False)
        out = " ".join(nfcli(app, 'hermes invoke spare "hello from nf"').split())
        assert "get_agents needs a proof" in out and "ECHO: hello from nf" not in out
        monkeypatch.setenv(KEY_ENV, str(keys["alice"].path))  # export NORFAB_HERMES_KEY=~/.ssh/id_ed25519
        out = " ".join(nfcli(app, 'hermes invoke spare "hello from nf"').split())
        assert "ECHO: hello from nf" in out, out
        approval = pending(lab, keys, "fixer")
        before = shows_users(base)
        out = " ".join(nfcli(app, f"hermes approve {approval['approval_id']}").split())  # alice: her own run
        assert "may not approve its own change (four eyes)" in out, out
        assert still_pending(lab, keys, approval["approval_id"]) and shows_users(base) == before
        monkeypatch.setenv(KEY_ENV, str(keys["bob"].path))
        out = " ".join(nfcli(app, f'hermes approve {approval["approval_id"]} note "from nf"').split())
        assert "approved" in out and "bob" in out, out
    deadline = time.time() + 30
    while shows_users(base) == before and time.time() < deadline:
        time.sleep(0.2)
    assert shows_users(base) == before + 1
    runs = ok(signed(clients["vera"], keys["vera"], "get_runs", agent="spare"))["runs"]
    assert any(r["instructions"] == "hello from nf" and r["client"] == "alice" for r in runs), runs
