"""The ground floor: what any program needs to run well in a process, and nothing of depthfinder's own.

Signals that stop a run (signals.py, interrupt.py), the retrain lock (lock.py), the temporary Prefect server
(server.py), local services and the team stack (services.py, stack.py), the fault log and how a fault is told in
one line (faults.py), retries of passing faults (retries.py), credentials kept in the environment (credentials.py),
which process holds something (liveness.py), files written whole by any number of writers at once (files.py), and
the process guard that sets a process up once (guard.py, environment.py). Every other package may import it; it
imports none of them (tests/test_layering.py).
"""
