"""
norfab-hermes: a NorFab ``hermes`` service whose workers host Hermes Agent
gateways and serve named network agents.

Kept import-light on purpose: NorFab's task registry is process-global, so
nothing here imports the worker module or Hermes.
"""

__version__ = "0.1.0"
