"""The Hermes room: the only code that imports Hermes (compat, adapter, plugin, log split, profile store, port)."""
