"""The registry plugged into orchestra's engines and into agent bridges.

``adapters`` (TaskHooks/SubagentHooks firing the registry, ``dag_payloads``: the DAG's
events as JSON), ``guard`` (``@registry.guard("Tool")``) and ``steps`` (``StepEvents``).

Imports: ``_firing`` and the layers below. Held by ``make lint`` (import-linter).
"""
