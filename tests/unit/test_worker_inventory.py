"""A worker-only inventory as NorFab reads it (a Jinja2 template): the broker's key comes back whole (no lab)."""

from norfab.core.inventory import NorFabInventory

from norfab_hermes.testing.embedded import write_worker_inventory

KEY_WITH_A_TAG = "zLJ2Y@C)[l%lr4tIpt1ajSKY19Y3{%*01R8e37{d"  # a real broker key: its worker never started


def test_a_broker_key_that_reads_as_a_template_tag_comes_back_whole(tmp_path):
    for n, key in enumerate((KEY_WITH_A_TAG, "{{a}}{#b#}" + "c" * 30)):
        path = write_worker_inventory(tmp_path / str(n), "hermes-worker-2", "tcp://127.0.0.1:5555", key)
        assert NorFabInventory(path=str(path)).broker["shared_key"] == key
