"""
The two install targets stay installable: the client side with plain pip next to
NorFab, the worker side with the one documented uv command and its overrides file.
`make install-check` proves both on fresh environments; these tests catch drift
in seconds (a pin bumped on one side, a doc that quotes another command).
"""

import importlib.metadata
import importlib.util
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import norfab_hermes.worker as worker_package

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
OVERRIDES_FILE = REPO / "worker-overrides.txt"
WORKER_INSTALL = 'uv pip install --override worker-overrides.txt "norfab-hermes[worker]"'


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list) -> dict:
    """{library: version} of exact pins."""
    found = {}
    for line in lines:
        requirement = Requirement(line)
        exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if exact:
            found[canonical(requirement.name)] = exact[0]
    return found


def requirements_of(distribution: str, extras: set) -> list:
    """Requires-Dist of an installed distribution that apply with these extras ('' = no extra)."""
    found = []
    for line in importlib.metadata.requires(distribution) or []:
        requirement = Requirement(line)
        if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
            found.append(line)
    return found


def override_lines() -> list:
    return [
        line.strip() for line in OVERRIDES_FILE.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]


def test_the_overrides_file_is_the_projects_uv_overrides():
    assert sorted(override_lines()) == sorted(PYPROJECT["tool"]["uv"]["override-dependencies"])


def test_the_overrides_are_exactly_the_pins_where_hermes_agent_and_norfab_disagree():
    # every NorFab extra a worker or the lab installs next to Hermes; NorFab's pin wins
    extras = {""} | {
        extra
        for line in PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["lab"]
        for extra in Requirement(line).extras
        if Requirement(line).name == "norfab"
    }
    norfab = pins(requirements_of("norfab", extras))
    hermes = pins(requirements_of("hermes-agent", {""}))
    conflicts = {name: norfab[name] for name in hermes.keys() & norfab.keys() if hermes[name] != norfab[name]}
    assert pins(override_lines()) == conflicts


def test_the_client_side_installs_without_hermes_and_agrees_with_norfabs_pins():
    base = PYPROJECT["project"]["dependencies"]
    names = {canonical(Requirement(line).name) for line in base}
    assert not names & {"hermes-agent", "jsonschema", "fakenos"}, "the client side must install with plain pip"
    assert [Requirement(line).extras for line in base if Requirement(line).name == "norfab"] == [{"nfcli"}]
    # an exact pin of ours that NorFab pins differently would make `pip install norfab-hermes` unsolvable
    norfab = pins(requirements_of("norfab", {"", "nfcli"}))
    ours = pins(base)
    assert {name: version for name, version in ours.items() if norfab.get(name, version) != version} == {}


def test_the_worker_and_lab_extras_pin_the_stack():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "hermes-agent==0.19.0" in extras["worker"]
    assert "norfab-hermes[worker]" in extras["lab"]
    norfab_pins = {
        str(Requirement(line).specifier)
        for line in PYPROJECT["project"]["dependencies"] + extras["lab"]
        if Requirement(line).name == "norfab"
    }
    assert norfab_pins == {"==0.25.0"}


def install_check_command() -> str:
    spec = importlib.util.spec_from_file_location("install_check", REPO / ".ci/install_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return shlex.join(module.WORKER_INSTALL)


@pytest.mark.parametrize("page", ["README.md", "docs/operations.md", "docs/quick-start.md"])
def test_every_page_quotes_the_one_tested_worker_install_command(page):
    assert WORKER_INSTALL in (REPO / page).read_text()
    assert shlex.split(WORKER_INSTALL) == shlex.split(install_check_command())  # what make install-check runs
    assert worker_package.WORKER_INSTALL == WORKER_INSTALL  # what a client-only worker start says


def test_operations_shows_the_overrides_file_as_shipped():
    text = (REPO / "docs/operations.md").read_text()
    block = re.search(r"cat > worker-overrides.txt <<'EOF'\n(.*?)\nEOF\n", text, re.S)
    assert block, "docs/operations.md lost the worker-overrides.txt block"
    assert block.group(1).splitlines() == override_lines()


def test_a_client_only_install_asked_for_a_hermes_worker_names_the_fix(monkeypatch):
    # NorFab loads the `norfab.workers` entry point in the worker process only; there, without the extra:
    real = importlib.metadata.distribution

    def distribution(name: str):
        if name == "hermes-agent":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    with pytest.raises(ImportError) as error:
        importlib.metadata.entry_points(group="norfab.workers")["hermes"].load()
    assert str(error.value) == (
        "the hermes worker needs hermes-agent, not installed in this environment: "
        f"install the worker side with '{WORKER_INSTALL}' (see docs/operations.md)"
    )
