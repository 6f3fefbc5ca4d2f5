"""How outputs become payloads (serializers, the size cap) and digests of code and bytes."""

from __future__ import annotations

import functools
import hashlib
import inspect
import pickle
from collections.abc import Callable
from types import CodeType
from typing import Any, Final, Protocol, final, runtime_checkable

__all__ = [
    "DEFAULT_MAX_BYTES",
    "PickleSerializer",
    "Serializer",
    "code_digest",
    "digest",
]

DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
"""The payload cap of a serializer that sets no ``max_bytes`` (64 MiB)."""


@runtime_checkable
class Serializer(Protocol):
    """Turns task outputs into journal payloads and back (``run(..., serializer=...)``).

    Any object with ``dumps`` and ``loads`` works: the ``pickle`` module itself,
    ``cloudpickle``, a JSON codec of yours. It may set ``max_bytes``: a payload larger
    than that is not journaled (the output stays in memory, not resumable); without it
    the cap is ``DEFAULT_MAX_BYTES``.
    """

    def dumps(self, obj: Any, /) -> bytes:
        """Serialize one output."""
        ...

    def loads(self, data: bytes, /) -> Any:
        """Read an output back."""
        ...


@final
class PickleSerializer:
    """The default serializer: ``pickle`` at its highest protocol, with a size cap.

    Loading a pickle runs code chosen by whoever wrote it: resume only from journals you
    (or your own runs) wrote.

    Args:
        max_bytes: the largest payload journaled; a larger output stays in memory only.
        protocol: the pickle protocol.
    """

    def __init__(
        self, *, max_bytes: int = DEFAULT_MAX_BYTES, protocol: int = pickle.HIGHEST_PROTOCOL
    ) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be an int >= 1, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.protocol = protocol

    def __repr__(self) -> str:
        return f"PickleSerializer(max_bytes={self.max_bytes})"

    def dumps(self, obj: Any, /) -> bytes:
        """Pickle one output."""
        return pickle.dumps(obj, self.protocol)

    def loads(self, data: bytes, /) -> Any:
        """Unpickle one output."""
        return pickle.loads(data)


def digest(data: bytes) -> str:
    """The hex digest orchestra journals (BLAKE2b, 128 bits)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def code_digest(fn: Callable[..., Any]) -> str:
    """Digest of a callable's code: what changes when its behaviour may have.

    A function counts by its source text (so moving it in its file changes nothing),
    or by its bytecode and constants when the source cannot be read; a
    ``functools.partial`` by its function and arguments; a method by its function; a
    callable object by its class's source. Values a closure captures are not included.
    """
    h = hashlib.blake2b(digest_size=16)
    _feed(h, fn)
    return h.hexdigest()


def _feed(h: Any, fn: Any) -> None:
    if isinstance(fn, functools.partial):
        _feed(h, fn.func)
        h.update(b"partial\0")
        h.update(_stable_bytes((fn.args, sorted(fn.keywords.items()))))
        return
    func = getattr(fn, "__func__", fn)  # a bound method: its function
    code = getattr(func, "__code__", None)
    if isinstance(code, CodeType):
        h.update(_source_or_code(func, code))
        return
    if not inspect.isroutine(fn) and not inspect.isclass(fn):  # a callable object
        cls = type(fn)
        h.update(f"{cls.__module__}.{cls.__qualname__}\0".encode())
        try:
            h.update(inspect.getsource(cls).encode())
        except (OSError, TypeError):
            call = getattr(cls, "__call__", None)  # noqa: B004  # the method, not callable()
            if call is not None and call is not fn:
                _feed(h, call)
        return
    # builtins and other routines without Python code: their name is all there is
    h.update(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}".encode())


@functools.lru_cache(maxsize=4096)
def _source_of(code: CodeType) -> bytes | None:
    try:
        return inspect.getsource(code).encode()
    except (OSError, TypeError):
        return None


def _source_or_code(func: Any, code: CodeType) -> bytes:
    wrapped = getattr(func, "__wrapped__", None)
    if wrapped is not None and getattr(wrapped, "__code__", None) is not None:
        return _source_or_code(wrapped, wrapped.__code__)
    source = _source_of(code)
    return source if source is not None else _code_bytes(code)


def _code_bytes(code: CodeType) -> bytes:
    """Bytecode, names and constants (nested code included), without file or line numbers."""
    parts = [code.co_name.encode(), code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        parts.append(_code_bytes(const) if isinstance(const, CodeType) else repr(const).encode())
    return b"\0".join(parts)


def _stable_bytes(value: object) -> bytes:
    try:
        return pickle.dumps(value, 4)
    except Exception:  # unpicklable arguments: their repr is the best we have
        return repr(value).encode()
