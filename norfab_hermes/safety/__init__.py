"""
What the hermes service refuses, and why: tool targets and arguments
(``guards``), device commands (``commands``), what a definition may ask of
the worker host (``host_access``), who may decide for an agent
(``approvers``), and secrets out of data and text (``redact``). Pure: no
Hermes, no worker; models and the worker import it.
"""
