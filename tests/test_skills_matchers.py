"""Matchers run on RE2: linear time whatever the pattern, unsupported syntax refused at load."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestra import ConfigError
from orchestra.skills import PromptHook, load

pytestmark = pytest.mark.anyio


def config(tmp_path: Path, matcher: str) -> Path:
    path = tmp_path / "orchestra.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            hooks:
              PreToolUse:
                - matcher: '{matcher}'
                  hooks: [{{type: prompt, prompt: matched}}]
            """
        )
    )
    return path


# Python's re backtracks through 2**30 ways on 30 a's: fire() would hang with the GIL
# held, and no timeout could stop it. The pytest timeout turns a regression into a failure.
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("matcher", "value"),
    [
        ("(a?){30}a{30}", "a" * 30),
        ("(a+)+$", "a" * 5000 + "!"),
        ("(\\w+\\s?)*$", "word " * 2000 + "!"),
        ("(.*a){20}", "a" * 10_000 + "b"),
    ],
)
async def test_catastrophic_patterns_answer_at_once(
    tmp_path: Path, matcher: str, value: str
) -> None:
    registry = load(config(tmp_path, matcher), project_dir=tmp_path)
    outcome = await registry.fire("PreToolUse", {"tool_name": value})
    expected = ("matched",) if matcher == "(a?){30}a{30}" else ()
    assert outcome.messages == expected


@pytest.mark.parametrize(
    ("matcher", "reason"),
    [
        ("(a)\\1", "invalid escape sequence: \\1 (RE2 matches in linear time"),
        ("Bash(?=x)", "invalid perl operator: (?= (RE2 matches in linear time"),
        ("(?<!x)Bash", "invalid perl operator: (?<! (RE2 matches in linear time"),
        ("(Bash", "missing ): (Bash"),
    ],
)
def test_patterns_re2_cannot_run_are_refused_with_file_line_and_reason(
    tmp_path: Path, matcher: str, reason: str
) -> None:
    path = config(tmp_path, matcher)
    with pytest.raises(ConfigError) as info:
        load(path)
    error = info.value
    assert (error.file, error.line, error.field) == (str(path), 3, "hooks.PreToolUse[0].matcher")
    assert f"not a valid RE2 regular expression: {reason}" in str(error)


@pytest.mark.parametrize(
    ("matcher", "matching", "not_matching"),
    [
        ("Bash", ["Bash"], ["BashOutput", "bash", "xBash"]),
        ("Edit|Write", ["Edit", "Write"], ["EditWrite", "Edi"]),
        ("mcp__.*", ["mcp__fs__read", "mcp__"], ["xmcp__"]),
        ("Bash(Output)?", ["Bash", "BashOutput"], ["BashOut"]),
        ("(?P<kind>Read|Grep)", ["Grep"], ["Glob"]),
        ("é+", ["éé"], ["e"]),
    ],
)
def test_matchers_match_the_whole_value(
    matcher: str, matching: list[str], not_matching: list[str]
) -> None:
    hook = PromptHook(event="PreToolUse", matcher=matcher, prompt="x")
    assert [hook.matches(v) for v in matching] == [True] * len(matching)
    assert [hook.matches(v) for v in not_matching] == [False] * len(not_matching)
    assert not hook.matches(None)
