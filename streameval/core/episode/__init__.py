"""The episode's data model: what perception keeps of an episode (its cache) and what scoring
makes of it (its scores), as plain types with no behaviour beyond their own fields.

Why here, in ``core``: the metrics fill these types and read them, the results layer stores
them (``results/cache/``), the engine builds them, and the observer interface
(``core/observers.py``, implemented by transports, results, scale and runs) carries an
episode's scores; every type needs only numpy and core's array and result types. So they sit
below all of their users, at the level of the observers that carry them, and nothing of the
episode's model points up (import-linter's layers contract in ``pyproject.toml``).
Reading and writing them on disk stays in ``results/cache/``; computing them stays in
``metrics/`` and ``engine/scoring.py``.
"""
