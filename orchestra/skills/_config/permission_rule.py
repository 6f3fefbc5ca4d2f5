r"""Claude Code's ``if`` field: one permission rule a tool call must match for a hook to run.

A rule is ``Tool`` or ``Tool(specifier)``, as in Claude Code's permission rules:

==============================  =====================================================
rule                            runs the hook when
==============================  =====================================================
``Bash``, ``Bash(*)``, ``*``    the tool is Bash (``*``, ``mcp__*``: a glob on the
                                tool's name)
``Bash(git *)``                 a simple command of the command matches ``git *``:
                                the command is parsed as bash parses it
                                (tree-sitter-bash: lists, pipelines, subshells,
                                groups, ``if``/``for``/``while``/``case`` and function
                                bodies, ``$(...)``, backticks, here-documents), its
                                quoting removed (``$'\x72m'`` is ``rm``), assignments
                                and redirections dropped, and the wrappers
                                ``timeout``, ``time``, ``nice``, ``nohup``,
                                ``stdbuf``, ``command``, ``builtin``, ``noglob``,
                                ``env``, ``exec``, ``sudo``, ... (with their options)
                                and a bare ``xargs`` stripped; ``/bin/rm`` is also
                                ``rm``; ``*`` is any text, a trailing `` *`` (or
                                ``:*``) needs a word boundary
``Edit(*.ts)``, ``Read(src/**)``  the file path matches the gitignore-style glob
                                (``//abs``, ``~/home``, ``/`` from the project, else
                                from ``cwd``; a bare name at any depth); ``Edit``
                                covers every tool that edits files, ``Read`` every
                                one that reads them
``WebFetch(domain:host)``       the URL's host matches (``*`` globs, any case)
``Tool(param:value)``           the top-level input ``param`` equals ``value`` (``*``
                                globs)
==============================  =====================================================

Whatever cannot be judged counts as a match, so a deny hook filtered by ``if`` still
judges it: a command that cannot be parsed, a program only known when it runs
(``$CMD x``, ``"$(echo rm)" x``), a pattern that names more than the program while a
word of that command expands (``$X``), or a specifier of a shape this module does not
know, runs the hook. Matching runs on RE2 (linear time).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Mapping
from typing import Any, Final, final
from urllib.parse import urlsplit

from orchestra.skills._config.matchers import Matcher
from orchestra.skills._config.shell_words import simple_commands

__all__ = ["PermissionRule"]

_RULE: Final = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*", re.S)
_PARAM: Final = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)", re.S)
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS: Final = frozenset(
    {"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"}
    | {"env", "exec", "sudo", "doas", "chronic", "ionice", "setsid", "unbuffer"}
)
_SHELL_TOOLS: Final = frozenset({"Bash", "PowerShell"})
_BASH_PARAMS: Final = frozenset({"description", "timeout", "run_in_background"})
_EDIT_TOOLS: Final = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
_READ_TOOLS: Final = frozenset({"Read", "Grep", "Glob"})
_PATH_FIELDS: Final = ("file_path", "notebook_path", "path")


def _glob(pattern: str, *, word_boundary: bool) -> Matcher:
    """A Bash rule's ``*`` glob as a regex over one whole subcommand (RE2: linear time)."""
    if word_boundary:  # "git *": "git" alone or "git " and anything
        head = re.escape(pattern[:-2]).replace(r"\*", ".*")
        return Matcher(f"(?s){head}(?: .*)?")
    return Matcher("(?s)" + re.escape(pattern).replace(r"\*", ".*"))


@functools.lru_cache(maxsize=256)
def _path_regex(pattern: str) -> Matcher:
    """A gitignore-style glob as a regex over an absolute path (RE2: linear time)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return Matcher("(?s)" + "".join(out) + "(?:/.*)?")


_WRAPPER_ARGS: Final = {  # the options of a wrapper that take the next word
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "exec": {"-a"},
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"},
    "stdbuf": {"-i", "-o", "-e"},
}


def _program(words: list[str | None]) -> list[str | None]:
    """``words`` from the program they run: leading wrappers and their options dropped.

    ``env A=1``, ``timeout 5``, ``nice -n 5``, ``sudo -u x``, ``exec``, ``command``, ...
    and a bare ``xargs`` run the words after them.
    """
    while words and isinstance(words[0], str) and words[0] in _WRAPPERS:
        wrapper = words.pop(0)
        takes = _WRAPPER_ARGS.get(wrapper or "", set())
        while words and isinstance(words[0], str) and words[0].startswith("-"):
            if words.pop(0) in takes and words:
                words.pop(0)
        if wrapper == "timeout" and words:
            words.pop(0)  # the duration
        while wrapper == "env" and words and _ASSIGNMENT.match(words[0] or ""):
            words.pop(0)
    if words[:1] == ["xargs"] and len(words) > 1 and not (words[1] or "-").startswith("-"):
        words.pop(0)
    return words


@final
class PermissionRule:
    """One compiled ``if`` rule (see the module docstring).

    Args:
        rule: the rule as written, e.g. ``"Bash(rm *)"``.
    """

    __slots__ = ("_check", "rule", "tool")

    def __init__(self, rule: str) -> None:
        self.rule = rule
        match = _RULE.fullmatch(rule)
        self.tool = match.group(1) if match else rule.strip()
        specifier = match.group(2) if match else None
        self._check = self._compile(specifier.strip() if specifier is not None else None)

    def __repr__(self) -> str:
        return f"PermissionRule({self.rule!r})"

    def _compile(self, spec: str | None) -> Any:
        if spec is None or spec in ("", "*"):
            return None
        tool = self.tool
        param = _PARAM.fullmatch(spec)
        if tool in _SHELL_TOOLS and (param is None or param.group(1) not in _BASH_PARAMS):
            word = spec.endswith(" *") or spec.endswith(":*")
            body = spec[:-2] + " *" if spec.endswith(":*") else spec
            specific = len(spec.rstrip("*: ").split()) > 1  # more than the command name
            return ("shell", _glob(body, word_boundary=word), specific)
        if tool == "WebFetch" and spec.startswith("domain:"):
            host = spec[len("domain:") :].strip().rstrip(".").lower()
            return ("domain", host)
        if tool in _EDIT_TOOLS or tool in _READ_TOOLS:
            return ("path", spec)
        if param is not None:
            return ("param", param.group(1), param.group(2).strip())
        return ("unknown",)

    def _names(self, tool_name: str) -> bool:
        tool = self.tool
        if tool == "Edit":
            return tool_name in _EDIT_TOOLS
        if tool == "Read":
            return tool_name in _READ_TOOLS
        if "*" in tool:
            return fnmatch.fnmatchcase(tool_name, tool)
        return tool_name == tool

    def admits(self, payload: Mapping[str, Any]) -> bool:
        """Whether a tool event's payload (``tool_name``, ``tool_input``) matches."""
        tool_name = payload.get("tool_name")
        if not isinstance(tool_name, str) or not self._names(tool_name):
            return False
        check = self._check
        if check is None:
            return True
        tool_input = payload.get("tool_input")
        if not isinstance(tool_input, Mapping):
            return True  # nothing to look into: fail open
        kind = check[0]
        if kind == "shell":
            return _shell_admits(check[1], check[2], tool_input.get("command"))
        if kind == "domain":
            url = tool_input.get("url")
            host = (urlsplit(url).hostname or "") if isinstance(url, str) else ""
            return fnmatch.fnmatchcase(host.rstrip(".").lower(), check[1])
        if kind == "path":
            return self._path_admits(check[1], tool_input, payload.get("cwd"))
        if kind == "param":
            value = tool_input.get(check[1])
            if value is None or isinstance(value, Mapping | list):
                return False
            text = str(value).lower() if isinstance(value, bool) else str(value)
            return fnmatch.fnmatchcase(text, check[2])
        return True  # a specifier this module does not read: fail open

    def _path_admits(self, spec: str, tool_input: Mapping[str, Any], cwd: Any) -> bool:
        path = next(
            (tool_input[f] for f in _PATH_FIELDS if isinstance(tool_input.get(f), str)), None
        )
        if path is None:
            return True
        base = cwd if isinstance(cwd, str) else os.getcwd()
        full = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
        if spec.startswith("//"):
            anchor, rest = "/", spec[2:]
        elif spec.startswith("~/"):
            anchor, rest = os.path.expanduser("~"), spec[2:]
        elif spec.startswith("/"):
            anchor, rest = os.environ.get("CLAUDE_PROJECT_DIR", base), spec[1:]
        else:
            anchor, rest = base, spec[2:] if spec.startswith("./") else spec
            if "/" not in rest.rstrip("/"):
                rest = "**/" + rest  # a bare name matches at any depth
        anchor = anchor.rstrip("/")
        if full != anchor and not full.startswith(anchor + "/"):
            return False
        relative = full[len(anchor) :].lstrip("/")
        return _path_regex(rest).fullmatch(relative)


def _shell_admits(glob: Matcher, specific: bool, command: Any) -> bool:
    if not isinstance(command, str):
        return True
    commands = simple_commands(command)
    if commands is None:
        return True  # cannot be parsed: it counts as a match
    for words in commands:
        words = _program(words)
        if not words:
            continue
        program = words[0]
        if program is None:
            return True  # the program is only known when it runs: a match
        text = " ".join(word if word is not None else "_" for word in words)
        if glob.fullmatch(text) or ("/" in program and glob.fullmatch(_basename(text))):
            return True
        if specific and None in words:
            return True  # a pattern naming more than the program: unknown words match
    return False


def _basename(text: str) -> str:
    """``/bin/rm -rf x`` as ``rm -rf x`` (a program named by its path)."""
    program, space, rest = text.partition(" ")
    return program.rpartition("/")[2] + space + rest


@functools.lru_cache(maxsize=512)
def permission_rule(rule: str | None) -> PermissionRule | None:
    """The compiled rule, or None when there is none."""
    return None if rule is None else PermissionRule(rule)
