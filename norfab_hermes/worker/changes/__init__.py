"""
The change envelope of one hermes worker: device locks, change windows and
limits, circuit breakers and changes whose outcome nobody knows.

Tools that change devices (``worker/tools/change.py``) go through it; the
tasks read its state and let an operator reset a breaker or acknowledge an
unknown outcome. What it keeps lives under the instance root, so a restart
(or a crash) does not forget a breaker, the last hour's changes or a change
that was in flight.
"""
