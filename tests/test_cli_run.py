"""``orchestra run``, run as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import orchestra.tracing as ot

ROOT = Path(__file__).resolve().parent.parent


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.pop("ORCHESTRA_TRACING", None)
    full_env.pop("TRACEPARENT", None)
    full_env.update({"COLUMNS": "200", **(env or {})})
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), full_env.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, "-m", "orchestra.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


PIPELINE = textwrap.dedent(
    """
    import orchestra
    from orchestra import RetryPolicy
    from tenacity import stop_after_attempt

    dag = orchestra.DAG("cli-demo")
    calls = {"flaky": 0}

    @dag.task
    async def fetch():
        return [1, 2, 3]

    @dag.task
    def flaky():
        calls["flaky"] += 1
        if calls["flaky"] < 2:
            raise ConnectionError("try again")
        return "ok"

    @dag.task(deps=[fetch, flaky])
    def total(fetch, flaky):
        return sum(fetch)

    hooks = [RetryPolicy(stop=stop_after_attempt(3))]
    """
)


def test_run_ok_with_summary_and_trace(tmp_path: Path) -> None:
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    out = cli("run", "pipeline.py", "--trace", "out.jsonl", cwd=tmp_path)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "run cli-demo ok: 3 tasks in " in out.stdout
    assert "(3 succeeded)" in out.stdout
    assert "retried 1" in out.stdout  # the live progress counts the retry
    assert "trace written to out.jsonl" in out.stdout
    spans = ot.read_jsonl(tmp_path / "out.jsonl")
    names = sorted(s["name"] for s in spans)
    assert names.count("task flaky") == 2
    assert "run cli-demo" in names
    assert "hook on_failure" in names
    assert len({s["traceId"] for s in spans}) == 1


def test_run_failure_exits_non_zero(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        textwrap.dedent(
            """
            import orchestra
            dag = orchestra.DAG("bad")

            @dag.task
            def boom():
                raise ValueError("kaput")

            @dag.task(deps=[boom])
            def after(boom):
                return boom
            """
        )
    )
    out = cli("run", "bad.py", cwd=tmp_path)
    assert out.returncode == 1
    assert "ValueError: kaput" in out.stdout
    assert "upstream_failed" in out.stdout
    assert "failed" in out.stdout


def test_run_picks_a_dag_by_name(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(
        textwrap.dedent(
            """
            import orchestra
            first = orchestra.DAG("first")
            first.task(lambda: 1, id="one")
            second = orchestra.DAG("second")
            second.task(lambda: 2, id="two")

            def build():
                dag = orchestra.DAG("built")
                dag.task(lambda: 3, id="three")
                return dag
            """
        )
    )
    out = cli("run", "two.py", cwd=tmp_path)
    assert out.returncode == 2
    assert "2 DAGs (first, second)" in out.stderr
    out = cli("run", "two.py:second", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "run second ok" in out.stdout
    assert "one" not in out.stdout.replace("done", "")
    out = cli("run", "two.py:build", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "run built ok" in out.stdout
    out = cli("run", "two.py:nope", cwd=tmp_path)
    assert out.returncode == 2
    assert "no 'nope'" in out.stderr
    assert "2 DAGs (first, second) and the functions build" in out.stderr
    assert "Traceback" not in out.stderr
    out = cli("run", "two.py:secnd", cwd=tmp_path)
    assert out.returncode == 2
    assert "no 'secnd' (did you mean 'second'?)" in out.stderr
    out = cli("run", "missing.py", cwd=tmp_path)
    assert out.returncode == 2


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("examples/pipeline.py", ["convert", "succeeded", "publish_dashboard", "skipped"]),
        ("examples/agents_research.py", ["papers", "answer", "succeeded"]),
        ("examples/agents_research.py:build", ["answer", "succeeded"]),
        ("examples/demo/pipeline.py", ["report", "succeeded"]),
    ],
)
def test_examples_run_with_the_command(script: str, expected: list[str]) -> None:
    out = cli("run", script, "--all", cwd=ROOT)  # --all: every task in the summary
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok:" in out.stdout
    for word in expected:
        assert word in out.stdout


def test_scripts_without_a_dag_say_how_to_run_them() -> None:
    out = cli("run", "examples/guarded_tool.py", cwd=ROOT)
    assert out.returncode == 2
    assert "defines no DAG and the functions main, shell, show" in out.stderr
    assert "Traceback" not in out.stderr


FACTORIES = textwrap.dedent(
    """
    import orchestra
    from orchestra import TaskHooks

    seen = []

    class Seen(TaskHooks):
        def before_execute(self, ctx):
            seen.append(ctx.task.id)
            print("hook saw", ctx.task.id)

    def pair():
        dag = orchestra.DAG("pair")
        dag.task(lambda: 1, id="one")
        return dag, [Seen()]

    def mapping():
        dag = orchestra.DAG("mapping")
        dag.task(lambda: 2, id="two")
        return {"dag": dag, "hooks": [Seen()]}

    def typo():
        return {"dag": orchestra.DAG("x"), "hoks": []}

    def broken():
        raise RuntimeError("no database")

    def needs(path):
        return orchestra.DAG("x")

    def wants_agents(dispatcher):
        return orchestra.DAG("x")

    def nothing():
        return 42

    limit = 3
    """
)


def test_factories_return_a_dag_and_its_hooks(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text(FACTORIES)
    for name, task in (("pair", "one"), ("mapping", "two")):
        out = cli("run", f"f.py:{name}", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert f"hook saw {task}" in out.stdout


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("typo", "returned unknown keys ['hoks']; expected ['dag', 'hooks', 'tools']"),
        ("broken", "f.py:broken() raised RuntimeError: no database (at "),
        ("needs", "f.py:needs() needs an argument 'path'"),
        ("wants_agents", "takes a dispatcher, but the file defines no 'agents'"),
        ("nothing", "f.py:nothing() returned int; expected a DAG"),
        ("limit", "f.py:limit is a int, not a DAG or a function returning one"),
    ],
)
def test_bad_factories_are_clear_errors(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "f.py").write_text(FACTORIES)
    out = cli("run", f"f.py:{name}", cwd=tmp_path)
    assert out.returncode in (1, 2)
    assert message in " ".join(out.stderr.split()), out.stderr
    assert "Traceback" not in out.stderr


def test_a_file_that_cannot_load_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("import orchestra\n\nx = 1 / 0\n")
    out = cli("run", "bad.py", cwd=tmp_path)
    assert out.returncode == 2
    assert "ZeroDivisionError: division by zero (at " in out.stderr
    assert "bad.py:3)" in out.stderr
    assert "Traceback" not in out.stderr


def test_max_concurrency(tmp_path: Path) -> None:
    (tmp_path / "wide.py").write_text(
        textwrap.dedent(
            """
            import anyio, orchestra, pathlib
            dag = orchestra.DAG("wide")
            state = {"now": 0, "most": 0}

            async def body():
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
                await anyio.sleep(0)
                await anyio.sleep(0)
                state["now"] -= 1
                pathlib.Path("most.txt").write_text(str(state["most"]))

            for i in range(20):
                dag.add(orchestra.Task(id=f"t{i}", fn=body))
            """
        )
    )
    out = cli("run", "wide.py", "--max-concurrency", "1", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "most.txt").read_text() == "1"
    out = cli("run", "wide.py", "--max-concurrency", "8", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert int((tmp_path / "most.txt").read_text()) > 1


def test_yaml_hooks_guard_tools_and_see_tasks(tmp_path: Path) -> None:
    (tmp_path / "orchestra.yaml").write_text(
        textwrap.dedent(
            """
            hooks:
              TaskCreated:
                - hooks:
                    - type: command
                      command: "cat >> created.jsonl; echo >> created.jsonl"
              PreToolUse:
                - matcher: "Bash"
                  hooks:
                    - type: command
                      command: "grep -q 'rm -rf' && { echo 'no rm -rf' >&2; exit 2; }; exit 0"
            """
        )
    )
    (tmp_path / "agentic.py").write_text(
        textwrap.dedent(
            """
            import orchestra

            async def bash(command: str) -> str:
                return f"ran {command}"

            tools = {"Bash": bash}
            dag = orchestra.DAG("agentic")

            @dag.task
            async def safe():
                return await tools["Bash"](command="ls")

            @dag.task
            async def unsafe():
                return await tools["Bash"](command="rm -rf /")
            """
        )
    )
    out = cli(
        "run",
        "agentic.py",
        "--hooks",
        "orchestra.yaml",
        "--trust-all",
        "--trace",
        "out.jsonl",
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stderr
    assert "no rm -rf" in out.stdout
    created = (tmp_path / "created.jsonl").read_text()
    assert '"task_id": "safe"' in created or '"task_id":"safe"' in created
    spans = ot.read_jsonl(tmp_path / "out.jsonl")
    tools = [s for s in spans if s["name"] == "execute_tool Bash"]
    assert len(tools) == 2
    decisions = sorted(
        ot.decode_attributes(s["attributes"]).get(ot.ATTR_TOOL_DECISION) for s in tools
    )
    assert decisions == ["allow", "deny"]


def test_traceparent_parents_the_run(tmp_path: Path) -> None:
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    out = cli(
        "run", "pipeline.py", "--trace", "out.jsonl", cwd=tmp_path, env={"TRACEPARENT": parent}
    )
    assert out.returncode == 0, out.stderr
    spans = ot.read_jsonl(tmp_path / "out.jsonl")
    assert {s["traceId"] for s in spans} == {"0af7651916cd43dd8448eb211c80319c"}
    (run,) = [s for s in spans if s["name"] == "run cli-demo"]
    assert run["parentSpanId"] == "b7ad6b7169203331"


def test_unreachable_otlp_backend_does_not_break_the_run(tmp_path: Path) -> None:
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    # port 9 (discard) on localhost: nothing listens, the export fails in the background
    out = cli("run", "pipeline.py", "--otlp", "http://127.0.0.1:9", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "succeeded" in out.stdout
