"""Arc's ``[[hooks]]`` (seed 001) from ``run.toml``/``server.toml`` as hook sources.

``toml`` reads the TOML tables, each key with its line; ``hooks`` runs them with Arc's
protocol. Imports no other format (``make lint``).
"""
