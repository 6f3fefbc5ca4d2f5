"""``provider_resource()``: the resource of the providers ``configure()`` makes."""

from __future__ import annotations

from typing import final

from opentelemetry.sdk.resources import Resource

__all__ = ["provider_resource"]


@final
class _HashedOnce(Resource):
    """A ``Resource`` that computes its hash once (its attributes are immutable).

    OpenTelemetry's OTLP encoders group every span of a batch by its resource, and the
    SDK's ``Resource.__hash__`` JSON-encodes the attributes at each call: about a fifth
    of what encoding a span for the trace file costs (issue 46, ``bench/tracing.py``).
    """

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = super().__hash__()
        return self._hash


def provider_resource(service_name: str) -> Resource:
    """``Resource.create({"service.name": service_name})``, hashed once."""
    created = Resource.create({"service.name": service_name})
    return _HashedOnce(created.attributes, created.schema_url)
