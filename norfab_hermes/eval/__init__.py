"""
The operator jobs harness: replay the lab's job scenarios against a model and
score every run (verdict, evidence, tools, cost). See docs/evaluation.md.

    python -m norfab_hermes.eval            (or: make eval)

Client side only: it starts NorFab on a copy of the lab and talks to the
hermes workers through the public tasks; it never imports Hermes or the
worker. Scenarios, playbooks and the lab live under examples/lab/.
"""
