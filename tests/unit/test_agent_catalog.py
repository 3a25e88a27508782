"""
The catalog's effective config: what get_agents and every run read is the
profile's config.yaml as it is on disk now, whether the worker rewrote it or
an operator edited it in place (no NorFab).
"""

import yaml

from norfab_hermes.models import AgentDefinition, HermesInventory
from norfab_hermes.worker.agents.catalog import AgentCatalog
from norfab_hermes.worker.files import write_file


def catalog_with(tmp_path, config):
    catalog = AgentCatalog("w", tmp_path, HermesInventory(), {"a": AgentDefinition(instructions="x")}, {})
    catalog.home("a").mkdir(parents=True)
    write_file(catalog.home("a") / "config.yaml", yaml.safe_dump(config))
    return catalog


def test_a_config_rewritten_by_the_worker_is_seen_by_the_next_call(tmp_path):
    catalog = catalog_with(tmp_path, {"model": {"default": "one"}})
    assert catalog.effective_config("a") == {"model": {"default": "one"}}
    write_file(catalog.home("a") / "config.yaml", yaml.safe_dump({"model": {"default": "two"}}))
    assert catalog.effective_config("a") == {"model": {"default": "two"}}


def test_a_config_edited_in_place_is_seen_by_the_next_call(tmp_path):
    catalog = catalog_with(tmp_path, {"model": {"default": "one"}})
    assert catalog.effective_config("a")["model"]["default"] == "one"
    with open(catalog.home("a") / "config.yaml", "w") as f:  # same inode, as an editor saving in place
        f.write(yaml.safe_dump({"model": {"default": "edited", "provider": "custom"}}))
    assert catalog.effective_config("a") == {"model": {"default": "edited", "provider": "custom"}}


def test_a_removed_config_is_empty_and_a_caller_cannot_change_the_next_read(tmp_path):
    catalog = catalog_with(tmp_path, {"model": {"default": "one"}})
    catalog.effective_config("a")["model"]["default"] = "changed by a caller"
    assert catalog.effective_config("a") == {"model": {"default": "one"}}
    (catalog.home("a") / "config.yaml").unlink()
    assert catalog.effective_config("a") == {}
