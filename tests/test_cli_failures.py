"""Failures a user can read: the failing line where they look, one-line CLI errors.

The failing frames of a task (the user's code shown, library frames folded) in
``RunResult.tracebacks``, ``orchestra run``'s summary and ``orchestra trace show
--failed``; a user's mistake at the command line (a misspelt hook moment, a missing
extra, a syntax error, a cycle) as one line, with the traceback under ``--debug``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import Fail, TaskHooks, TaskState
from orchestra._tracebacks import format_error, frames_of, parse_stacktrace

ROOT = Path(__file__).resolve().parent.parent

FLOW = textwrap.dedent(
    """
    import orchestra

    dag = orchestra.DAG("flow")


    def parse(text):
        return int(text)


    @dag.task
    def load():
        return parse("x")


    @dag.task(deps=[load])
    def later(load):
        return load
    """
)
PARSE_LINE = 8  # `return int(text)` in FLOW
LOAD_LINE = 13  # `return parse("x")`

# Runs the CLI with some modules made impossible to import, as on a plain install
# without an extra: the import system itself raises ModuleNotFoundError for them.
_WITHOUT = textwrap.dedent(
    """
    import sys
    blocked = tuple(sys.argv[1].split(","))

    class Missing:
        def find_spec(self, name, path=None, target=None):
            if name.startswith(blocked):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Missing())
    for name in [m for m in sys.modules if m.startswith(blocked)]:
        del sys.modules[name]
    from orchestra.cli import main
    main(sys.argv[2:], prog_name="orchestra")
    """
)


def cli(
    *args: str, cwd: Path, without: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("ORCHESTRA_TRACING", "TRACEPARENT")}
    full.update({"COLUMNS": "200", **(env or {})})
    full = {k: v for k, v in full.items() if v != ""}  # env={"COLUMNS": ""} unsets it
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "orchestra.cli", *args]
    if without is not None:
        command = [sys.executable, "-c", _WITHOUT, without, *args]
    return subprocess.run(command, cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


def load_flow(tmp_path: Path, source: str = FLOW) -> Any:
    """Import ``source`` as a real module file, so its frames are the user's code."""
    import importlib.util

    path = tmp_path / "userflow.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"userflow_{tmp_path.name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- RunResult.tracebacks ---------------------------------------------------------------


@pytest.mark.anyio
async def test_result_tracebacks_show_the_users_frames_and_fold_the_library(
    tmp_path: Path,
) -> None:
    module = load_flow(tmp_path)
    result = await orchestra.run(module.dag)
    assert result.states["load"] is TaskState.FAILED
    text = result.tracebacks["load"]
    lines = text.splitlines()
    assert lines[0].startswith("Traceback (most recent call last; ")
    assert "library frames folded" in lines[0]
    path = str(tmp_path / "userflow.py")
    assert lines[1:] == [
        f'  File "{path}", line {LOAD_LINE}, in load',
        '    return parse("x")',
        f'  File "{path}", line {PARSE_LINE}, in parse',
        "    return int(text)",
        "ValueError: invalid literal for int() with base 10: 'x'",
    ]
    assert "orchestra" not in text.replace(path, "")  # not one frame of the engine's
    assert set(result.tracebacks) == {"load"}  # `later` never ran: it has no error
    full = "".join(traceback.format_exception(result.errors["load"]))
    assert "orchestra" in full  # the folded frames are still on the error itself


def test_a_task_failed_by_a_hook_has_no_traceback(tmp_path: Path) -> None:
    class No(TaskHooks):
        def before_execute(self, ctx: Any) -> Fail:
            return Fail("not today")

    dag = orchestra.DAG("refused")
    dag.task(lambda: 1, id="one")
    result = orchestra.run_sync(dag, hooks=[No()])
    assert result.states["one"] is TaskState.FAILED
    assert "one" in result.errors
    assert result.tracebacks == {}


def test_a_library_run_in_the_middle_is_one_line(tmp_path: Path) -> None:
    module = load_flow(
        tmp_path,
        textwrap.dedent(
            """
            import json

            def read(text):
                return json.loads(text)
            """
        ),
    )
    with pytest.raises(json.JSONDecodeError) as caught:
        module.read("{nope")
    text = format_error(caught.value)
    assert text is not None
    lines = text.splitlines()
    # the test's own frame is the user's; the user's read(); json's frames folded but the
    # innermost, which says where the error was raised
    assert any(line.endswith(", in read") for line in lines)
    folded = [line for line in lines if line.startswith("  [")]
    assert folded
    assert "library frame" in folded[0]
    assert "json" in folded[0]
    assert lines[-1].startswith("json.decoder.JSONDecodeError: ")
    assert lines[-3].startswith('  File "')
    assert "json" in lines[-3]


def test_a_stacktrace_text_reads_back_as_the_same_frames(tmp_path: Path) -> None:
    module = load_flow(tmp_path)
    try:
        module.parse("x")
    except ValueError as exc:
        error = exc
    try:
        raise RuntimeError("wrapped") from error
    except RuntimeError as exc:
        chained = exc
    frames, closing = parse_stacktrace("".join(traceback.format_exception(chained)))
    assert closing == "RuntimeError: wrapped"  # the last exception of the chain
    assert [f.name for f in frames] == [f.name for f in frames_of(chained)]
    frames, closing = parse_stacktrace("".join(traceback.format_exception(error)))
    assert frames == frames_of(error)
    assert frames[-1].code == "return int(text)"
    assert not frames[-1].library
    assert closing == "ValueError: invalid literal for int() with base 10: 'x'"
    assert parse_stacktrace("not a traceback\nat all") == ((), "at all")


# --- orchestra run and trace show --failed -----------------------------------------------


def test_run_summary_shows_the_failing_line(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    out = cli("run", "flow.py", "--trace", "run.jsonl", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    text = out.stdout
    assert f"at flow.py:{PARSE_LINE}" in text  # in the table, beside the error
    assert "load failed:" in text
    assert f'File "{tmp_path / "flow.py"}", line {PARSE_LINE}, in parse' in text
    assert "    return int(text)" in text
    assert "library frames folded" in text
    assert "orchestra/dag" not in text
    assert "anyio" not in text
    assert out.stderr == ""
    line = cli("trace", "show", "run.jsonl", cwd=tmp_path).stdout
    assert (
        f"ValueError: invalid literal for int() with base 10: 'x'  at flow.py:{PARSE_LINE}" in line
    )
    shown = cli("trace", "show", "run.jsonl", "--failed", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "load failed:" in shown.stdout
    assert f'File "{tmp_path / "flow.py"}", line {PARSE_LINE}, in parse' in shown.stdout
    assert "    return int(text)" in shown.stdout
    assert "anyio" not in shown.stdout
    # the report's data carries the same frames for the task panel (drawn: see
    # test_report_browser)
    report = cli("trace", "report", "run.jsonl", "-o", "run.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "run.html").read_text()
    data = page.split('id="orchestra-data">', 1)[1].split("</script>", 1)[0]
    tasks = {t["id"]: t for t in json.loads(data)["tasks"]}
    assert "return int(text)" in tasks["load"]["attempts"][0]["tb"]


def test_many_failures_print_each_traceback_once(tmp_path: Path) -> None:
    (tmp_path / "many.py").write_text(
        textwrap.dedent(
            """
            import orchestra
            dag = orchestra.DAG("many")

            def same(**_):
                raise KeyError("same place")

            def other(**_):
                raise OSError("elsewhere")

            for i in range(20):
                dag.task(same, id=f"s{i}")
            dag.task(other, id="o")
            """
        )
    )
    out = cli("run", "many.py", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stdout.count("Traceback (") == 2
    # the group is named after the one of the 20 that failed first: threads decide which
    assert re.search(r"\bs\d+ \(and 19 more\) failed:", out.stdout), out.stdout
    assert "o failed:" in out.stdout


# --- one line for a user's mistake, --debug for more ------------------------------------

TYPO = textwrap.dedent(
    """
    import orchestra
    dag = orchestra.DAG("typo")

    @dag.task
    def one():
        return 1

    class Alerts(orchestra.TaskHooks):
        def on_fail(self, ctx, error):
            print("failed", ctx.task.id)

    hooks = [Alerts()]
    """
)


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == ""  # no progress bar, no table
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def test_a_misspelt_hook_moment_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "typo.py").write_text(TYPO)
    line = one_line(cli("run", "typo.py", cwd=tmp_path))
    assert "Alerts.on_fail is not a moment of TaskHooks" in line
    assert "'on_failure'" in line
    assert "--debug" in line
    debug = cli("run", "typo.py", "--debug", cwd=tmp_path)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "_moments.py" in debug.stderr
    assert "TypeError: Alerts.on_fail is not a moment" in debug.stderr
    before = cli("--debug", "run", "typo.py", cwd=tmp_path)  # on the group works too
    assert "Traceback (most recent call last)" in before.stderr
    env = cli("run", "typo.py", cwd=tmp_path, env={"ORCHESTRA_DEBUG": "1"})
    assert "Traceback (most recent call last)" in env.stderr


def test_a_syntax_error_in_the_users_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "syn.py").write_text("import orchestra\n\ndef one(:\n    return 1\n")
    line = one_line(cli("run", "syn.py", cwd=tmp_path))
    assert f"SyntaxError: invalid syntax (at {tmp_path / 'syn.py'}:3: def one(:)" in line
    debug = cli("run", "syn.py", "--debug", cwd=tmp_path)
    assert "Traceback (most recent call last)" in debug.stderr
    assert "def one(:" in debug.stderr


def test_a_cycle_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cyc.py").write_text(
        "import orchestra\ndag = orchestra.DAG('cyc')\n"
        "dag.task(lambda: 1, id='a', deps=['b'])\ndag.task(lambda: 1, id='b', deps=['a'])\n"
    )
    line = one_line(cli("run", "cyc.py", cwd=tmp_path))
    assert "has a cycle" in line
    assert "Traceback" in cli("run", "cyc.py", "--debug", cwd=tmp_path).stderr


def test_otlp_without_its_extra_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    out = cli(
        "run",
        "flow.py",
        "--otlp",
        "http://127.0.0.1:9",
        cwd=tmp_path,
        without="opentelemetry.exporter.otlp",
    )
    line = one_line(out)
    assert "--otlp needs the OTLP exporter: pip install 'orchestra-hooks[otlp]'" in line
    debug = cli(
        "run",
        "flow.py",
        "--otlp",
        "http://127.0.0.1:9",
        "--debug",
        cwd=tmp_path,
        without="opentelemetry.exporter.otlp",
    )
    assert "ModuleNotFoundError: No module named 'opentelemetry.exporter.otlp" in debug.stderr


def test_a_bug_keeps_its_traceback(tmp_path: Path) -> None:
    # what is nobody's configuration mistake is not made one line: the traceback stays
    from orchestra.cli._errors import one_line as describe

    assert describe(AttributeError("x")) is None
    assert describe(KeyError("x")) is None
    assert describe(TypeError("the user's own")) is None  # not raised by orchestra
    assert describe(orchestra.DAGError("bad dag")) == "bad dag"
    assert describe(ExceptionGroup("one", [orchestra.ConfigError("cfg")])) == "cfg"


def test_a_hook_file_that_does_not_validate_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    (tmp_path / "hooks.yaml").write_text(
        "hooks:\n  PreToolUse:\n    - hooks:\n        - type: comand\n          command: x\n"
    )
    line = one_line(cli("run", "flow.py", "--hooks", "hooks.yaml", "--trust-all", cwd=tmp_path))
    assert "hooks.yaml:4: hooks.PreToolUse[0].hooks[0].type: unknown hook type 'comand'" in line
    assert "'command'" in line
    line = one_line(cli("run", "flow.py", "--hooks", "hooks.yaml", cwd=tmp_path))
    assert "not trusted" in line
    assert "orchestra hooks trust hooks.yaml" in line
