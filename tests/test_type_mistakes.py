"""A type mistake is refused at the call, with the fix in the message.

As a new user wrote them: the hook class where an instance belongs (``hooks=[H]``, which
said "type.before_run(self, ctx) cannot take the arguments ..."), one hook where a list
belongs (``hooks=H()``, which said "'H' object is not iterable"), and tenacity arguments
that are not strategies (``RetryPolicy(stop=3)``, accepted, then every failed task failed
at run time).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tenacity

import orchestra
from orchestra import DAG, Dispatcher, HookChain, RetryPolicy, SubagentHooks, TaskHooks


class Audit(TaskHooks):
    def before_run(self, ctx: orchestra.RunContext) -> None:
        return None


def _dag() -> DAG:
    dag = DAG("d")
    dag.add(orchestra.Task(id="a", fn=lambda: 1))
    return dag


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        (
            [Audit],
            "hooks=[..., Audit, ...] holds the class Audit, where a hook object belongs: "
            "write Audit() (an instance)",
        ),
        (
            Audit(),
            "hooks=Audit() is one hook, where a list of hook objects belongs: "
            "write hooks=[Audit()]",
        ),
        (
            Audit,
            "hooks=Audit is a class, where a list of hook objects belongs: write hooks=[Audit()]",
        ),
        (42, "hooks must be a list of hook objects, got int 42"),
    ],
)
def test_run_sync_refuses_hooks_of_the_wrong_shape(hooks: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        orchestra.run_sync(_dag(), hooks=hooks)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_the_engines_refuse_them_at_construction_too() -> None:
    class Watch(SubagentHooks):
        def before_dispatch(self, ctx: orchestra.SubagentHookContext) -> None:
            return None

    with pytest.raises(TypeError, match=r"write hooks=\[Watch\(\)\]"):
        Dispatcher([], hooks=Watch())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"write Watch\(\) \(an instance\)"):
        HookChain([Watch], trait=SubagentHooks)
    assert HookChain([Audit()]).has("before_run")  # the right shape still compiles


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"stop": 3},
            "RetryPolicy(stop=3): int is not a strategy: write stop=tenacity.stop_after_attempt(3)",
        ),
        (
            {"wait": 2.5},
            "RetryPolicy(wait=2.5): float is not a strategy: write wait=tenacity.wait_fixed(2.5)",
        ),
        (
            {"retry": ValueError},
            "RetryPolicy(retry=ValueError): an exception class, not a "
            "strategy object: write retry=tenacity.retry_if_exception_type(ValueError)",
        ),
        (
            {"stop": tenacity.stop_after_attempt},
            "RetryPolicy(stop=stop_after_attempt): a "
            "class, not a strategy object: write stop=tenacity.stop_after_attempt(3)",
        ),
        (
            {"wait": lambda: 1.0},
            "a strategy is called with one argument, the retry state: "
            "write wait=tenacity.wait_fixed(2)",
        ),
    ],
)
def test_retry_policy_refuses_what_is_not_a_strategy(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value).endswith(message)


def test_strategies_and_plain_callables_are_still_taken() -> None:
    policy = RetryPolicy(
        stop=tenacity.stop_after_attempt(2) | tenacity.stop_after_delay(5),
        wait=lambda state: 0.0,
        retry=tenacity.retry_if_exception_type(ConnectionError),
    )
    calls = []
    dag = DAG("flaky")

    @dag.task
    def flaky() -> int:
        calls.append(1)
        if len(calls) < 2:
            raise ConnectionError("down")
        return 7

    result = orchestra.run_sync(dag, hooks=[policy])
    assert result.outputs == {"flaky": 7}
    assert result.attempts == {"flaky": 2}


def test_a_script_that_passes_the_class_gets_the_fix_on_its_last_line(tmp_path: Path) -> None:
    script = tmp_path / "flow.py"
    script.write_text(
        textwrap.dedent(
            """
            import orchestra
            from orchestra import DAG, TaskHooks

            class Audit(TaskHooks):
                def before_run(self, ctx):
                    return None

            dag = DAG("d")
            dag.add(orchestra.Task(id="a", fn=lambda: 1))
            orchestra.run_sync(dag, hooks=[Audit])
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "TypeError: hooks=[..., Audit, ...] holds the class Audit, where a hook object "
        "belongs: write Audit() (an instance)"
    )
