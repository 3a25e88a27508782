"""
The fault benchmark: a generated lab of a given size, one fault injected per scenario
(or none), the agent's structured verdict scored for detection, localization and
root cause. See docs/benchmark.md.

    python -m norfab_hermes.eval.bench --size medium --scenarios 40 --seed 7

Client side, like the rest of the eval: it never imports Hermes or the worker.
"""
