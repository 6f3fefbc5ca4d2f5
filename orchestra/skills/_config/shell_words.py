r"""The simple commands of a shell command, from a real parse (tree-sitter-bash).

``simple_commands(command)`` answers every simple command the shell would run, wherever
it stands: in a pipeline or a list, a subshell ``( )``, a group ``{ }``, an ``if``,
``while``, ``for`` or ``case`` body, a function's body, a ``$(...)``, backticks, a
process substitution or a here-document's expansions. Each is its words as the shell
sees them once quoting is removed (``'r'm``, ``"rm"``, ``r\m`` and ``$'\x72m'`` are all
``rm``); assignments (``A=1 rm``) and redirections (``>/dev/null rm``) are not words. A
word holding an expansion (``$X``, ``$(...)``, ``${X}``) is only known when it runs: it
is None. A command that does not parse answers None.
"""

from __future__ import annotations

import codecs
import functools
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["simple_commands"]

Words = list[str | None]
_ESCAPED: Final = re.compile(r"\\(\n|.)", re.S)
_IN_DOUBLE_QUOTES: Final = re.compile(r'\\([\\"$`\n])')
_NOT_WORDS: Final = frozenset({"variable_assignment", "file_redirect", "heredoc_redirect"})


@functools.cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def simple_commands(command: str) -> list[Words] | None:
    """Every simple command of ``command``, in order, as words (see the module docstring)."""
    tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
    if tree.root_node.has_error:
        return None
    found: list[Words] = []
    pending = [tree.root_node]
    while pending:
        node = pending.pop()
        if node.type == "command":
            found.append(_words(node))
        pending.extend(reversed(node.children))
    return found


def _words(command: Node) -> Words:
    words: Words = []
    for child in command.named_children:
        if child.type == "command_name":
            inner = child.named_children[0] if child.named_child_count else child
            words.append(_literal(inner))
        elif child.type not in _NOT_WORDS and not child.type.endswith("_redirect"):
            words.append(_literal(child))
    return words


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _literal(node: Node) -> str | None:
    """The word ``node`` stands for once quoting is removed; None when it expands."""
    kind, text = node.type, _text(node)
    if kind in ("word", "command_name"):
        return _ESCAPED.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)
    if kind == "number":
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind in ("string", "translated_string"):
        if any(child.type != "string_content" for child in node.named_children):
            return None  # "$X", "$(...)": known when it runs
        body = text[2:-1] if kind == "translated_string" else text[1:-1]
        return _IN_DOUBLE_QUOTES.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), body)
    if kind == "ansi_c_string":
        try:
            return codecs.decode(text[2:-1].encode("latin-1", "backslashreplace"), "unicode_escape")
        except (UnicodeDecodeError, ValueError):
            return None
    if kind == "concatenation":
        parts = [_literal(part) for part in node.children]
        return None if None in parts else "".join(p for p in parts if p is not None)
    return None  # an expansion, a substitution, a brace expression...
