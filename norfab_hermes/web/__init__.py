"""
The hermes web console: approvals, runs and their timelines in a browser,
through the broker with one NorFab client (client side: never imports the
worker or Hermes). An NFWeb application module (``HermesConsole``) started
on its own with ``python -m norfab_hermes.web``; see docs/web.md.
"""
