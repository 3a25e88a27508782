"""
The fault benchmark end to end at the small size: a generated lab (real NorFab, FakeNOS devices
over SSH, nornir, the records worker, a hermes worker), scenarios injected in turn on the one
lab, structured verdicts through response_schema. The generic baseline finds each fault from what
its tools returned; a model that names every device gets no localization credit; every run's
seed and ground truth land in the results, to replay it.
"""

import json

from norfab_hermes.eval.bench.cli import main

REPLAY = ["healthy:11", "crc_errors:13"]  # a counter that must rise between two real polls


def test_a_small_run_scores_the_baseline_and_a_wrong_model(tmp_path, capsys):
    code = main(
        ["--size", "small", "--replay", *REPLAY, "--model", "baseline", "every-device", "--results", str(tmp_path)]
    )
    assert code == 0, capsys.readouterr().out
    (folder,) = tmp_path.iterdir()
    drawn = json.loads((folder / "scenarios-small.json").read_text())
    assert [f"{s['kind']}:{s['seed']}" for s in drawn] == REPLAY
    runs = {path.stem: json.loads(path.read_text()) for path in (folder / "runs").glob("*.json")}
    assert len(runs) == 4
    for index in range(2):
        baseline = runs[f"baseline-small-{index:02d}"]["score"]
        truth = baseline["truth"]
        assert baseline["stop_reason"] == "completed" and baseline["verdict"] is not None
        assert baseline["verdict"]["fault_found"] == (truth["kind"] != "healthy")
        assert baseline["fabricated"] == [] and baseline["unsafe_calls"] == [] and baseline["tool_calls"] > 0
        if truth["kind"] != "healthy":
            assert baseline["device_correct"] and baseline["interface_correct"] and baseline["kind_correct"]
        assert not runs[f"every-device-small-{index:02d}"]["score"]["device_correct"]
    table = (folder / "table.md").read_text()
    assert "| small | baseline | 2 (1) | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |" in table
    assert "| small | every-device | 2 (1) |" in table and "NetOpsBench" in table
