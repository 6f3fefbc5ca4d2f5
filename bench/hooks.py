"""Skills-hook benchmark: the command runner and ``fire`` against baselines in the same run.

On each anyio backend (asyncio, trio), prints figures and ratios of:

(a) per-event latency of a command hook (``true``) through ``run_command`` (the event
    JSON on stdin, stdout and stderr read, the group killed, the child reaped) against a
    bare ``anyio.run_process(["sh", "-c", "true"])``: target at most 1.2x (best and
    median of blocks of calls taken in turn);
(b) the same hook fired through ``HookRegistry.fire``: target at most 1.25x;
(c) 50 hooks run concurrently against 50 one at a time (``run_command`` and ``fire``),
    with ``true`` (bound by process creation, which the loop thread (asyncio) or one
    worker thread at a time does) and ``sleep 0.05`` (bound by waiting): the throughput
    ratio shows whether anything serializes them;
(d) ``fire`` of an event with no hooks: target at most 1 µs;
(e) the same ``true`` sandboxed (``sandbox: true``, bubblewrap) against bare: no target,
    the figure tells users what the sandbox costs.

``fire`` runs the whole path: the RE2 matcher, the minimal environment, the
``max_parallel_hooks`` slot, the event JSON, the outcome.

Hooks without a spawn per event (``persistent_section``), on each backend:

(f) a persistent hook's ``fire`` round trip against a raw NDJSON round trip to the same
    kind of process (a Python loop answering one JSON line per line): the event encoded,
    written, the answer read and decoded, over bare non-blocking pipes or anyio's process
    streams; target at most 1.5x the faster, in this process's CPU time (median of the
    blocks, and of 5 runs of them), wall time beside it.
    Then the same hook spawned per event (the same script, one event per process):
    target at least 8x slower than the persistent one. An ``sh`` ``while read`` loop
    against ``sh`` spawned per event, for scale.
(g) a ``type: python`` no-op hook's ``fire``, in CPU time (the machine is shared; median
    of 5 blocks): target at most 5 µs; a fixed ``permission`` hook's ``fire`` beside it.
(h) a 200-task DAG with a TaskCreated and a TaskCompleted hook: per-task overhead against
    no hooks, spawned per event (``sh``, Python), persistent (1 and 8 in flight) and
    in-process.

Python hooks (``async_hooks_section``), on each backend:

(j) ``HookChain.call`` of 1 and 5 no-op hooks as ``def``, as ``async def`` at the default
    timeout (60 s) and as ``async def`` without a timeout: CPU per call, medians with
    min-max of interleaved rounds (informative: what the timeout machinery costs);
(k) a run of no-op tasks with the same hooks on ``before_execute``, ``after_execute`` and
    ``on_end``: CPU per task, each against the same run without hooks (informative; the
    targets are ``bench/hook_costs.py``'s).

Several matching hooks (``matching_section``), on each backend:

(l) 5 matching command hooks with distinct no-op commands on one event against 1: on
    PostToolUse (they run at once) target at most 2.5x, on PreToolUse (they may rewrite,
    so they run in order) at most 5.5x.

Handlers in parallel (``parallel_section``), on each backend:

(i) 3 matching handlers of 0.3 s each (distinct commands: identical ones are kept once)
    on ``PreToolUse``, fired from a Claude Code ``settings.json`` (Claude Code runs every
    matching handler at once) and as 3 orchestra ``phase: guard`` hooks (guards judge the
    same input at once), against one such handler: target at most 1.2x (median, min-max
    of interleaved rounds).

Run: ``python bench/hooks.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import anyio

import orchestra
from orchestra import DAG, Task
from orchestra.skills import (
    CommandHook,
    HookRegistry,
    HookSpec,
    PermissionHook,
    PythonHook,
    Sandbox,
    load,
)
from orchestra.skills._hooks.spec import event_data
from orchestra.skills._processes.command import run_command
from orchestra.skills._processes.sandbox import bwrap_command

QUICK = "--quick" in sys.argv
ROUNDS = 15 if QUICK else 60  # blocks of each measured function, taken in turn
BLOCK = 10  # calls per block
REPEAT = 3 if QUICK else 5
CONCURRENT = 50
EMPTY_FIRES = 100_000 if QUICK else 1_000_000

EVENT = json.dumps(
    {
        "hook_event_name": "PreToolUse",
        "session_id": "bench",
        "cwd": os.getcwd(),
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
    }
).encode()
ENV = dict(os.environ)

CONFIG = """\
hooks:
  PreToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "true"
          on_error: continue
    - matcher: "Slow"
      hooks:
        - type: command
          command: "sleep 0.05"
          on_error: continue
"""


async def bare() -> None:
    await anyio.run_process(["sh", "-c", "true"])


def running(command: str, wrap: list[str] | None = None) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run() -> None:
        await run_command(
            command=command, args=None, stdin=EVENT, env=ENV, cwd=None, timeout=10, wrap=wrap or ()
        )

    return run


SANDBOX = (
    bwrap_command(Sandbox(), project_dir=os.getcwd(), skill_dir=None)
    if shutil.which("bwrap")
    else None
)


def firing(registry: HookRegistry, tool: str) -> Callable[[], Coroutine[Any, Any, None]]:
    payload = {"tool_name": tool, "tool_input": {"command": "ls -la"}}

    async def fire() -> None:
        outcome = await registry.fire("PreToolUse", payload)
        assert not outcome.errors, outcome.errors

    return fire


async def per_call(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    """Seconds per call, one call at a time."""
    return (await timed(fn, calls))[0]


async def timed(fn: Callable[[], Awaitable[object]], calls: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call, one call at a time; CPU is this process's."""
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - started) / calls, (time.process_time() - cpu) / calls


async def latencies(
    fns: Mapping[str, Callable[[], Awaitable[object]]], cpu: dict[str, float] | None = None
) -> dict[str, tuple[float, float]]:
    """(best, median) wall seconds per call of each function, over blocks taken in turn.

    Small blocks taken in turn let drift in the machine's load hit all alike; the best
    block is the figure least disturbed by other processes on a shared machine. With
    ``cpu``, the median CPU seconds per call of each function go there too.
    """
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu_samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            wall, used = await timed(fn, BLOCK)
            samples[name].append(wall)
            cpu_samples[name].append(used)
    if cpu is not None:
        cpu.update((name, statistics.median(values)) for name, values in cpu_samples.items())
    return {name: (min(values), statistics.median(values)) for name, values in samples.items()}


async def concurrently(fn: Callable[[], Coroutine[Any, Any, None]], n: int = CONCURRENT) -> float:
    """Seconds for ``n`` calls at once."""
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(fn)
    return time.perf_counter() - started


async def empty_fire(registry: HookRegistry, n: int) -> float:
    """Seconds per ``fire`` of an event that has no hooks."""
    payload = {"tool_name": "Bash"}
    fire = registry.fire
    started = time.perf_counter()
    for _ in range(n):
        await fire("PostToolUse", payload)
    return (time.perf_counter() - started) / n


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.3f} ms"


async def main(registry: HookRegistry, empty: HookRegistry) -> None:
    runner, fire = running("true"), firing(registry, "Bash")
    measured = {"bare": bare, "runner": runner, "fire": fire}
    rows = [
        ("(a) bare anyio.run_process(sh -c true)", "bare"),
        ("    run_command(true)", "runner"),
        ("(b) registry.fire, one command hook", "fire"),
    ]
    if SANDBOX is not None:
        measured["sandboxed"] = running("true", SANDBOX)
        rows.append(("(e) run_command(true), sandboxed (bwrap)", "sandboxed"))
    for fn in measured.values():  # warm up: imports, first spawn, caches
        await per_call(fn, 10)

    latency = await latencies(measured)
    (base_best, base_median) = latency["bare"]
    for label, key in rows:
        best, median = latency[key]
        print(
            f"  {label:<40} best {ms(best)}  {best / base_best:.2f}x"
            f"   median {ms(median)}  {median / base_median:.2f}x"
        )

    cases = {
        "run_command(true)": runner,
        "fire -> true": fire,
        "run_command(sleep 0.05)": running("sleep 0.05"),
        "fire -> sleep 0.05": firing(registry, "Slow"),
    }
    for name, fn in cases.items():
        serial = CONCURRENT * statistics.median(
            [await per_call(fn, CONCURRENT) for _ in range(REPEAT)]
        )
        parallel = statistics.median([await concurrently(fn) for _ in range(REPEAT)])
        print(
            f"  (c) {CONCURRENT} x {name:<24} one at a time {serial * 1e3:7.1f} ms,"
            f" concurrently {parallel * 1e3:6.1f} ms: throughput {serial / parallel:5.2f}x"
        )

    no_hooks = statistics.median([await empty_fire(registry, EMPTY_FIRES) for _ in range(3)])
    none_at_all = statistics.median([await empty_fire(empty, EMPTY_FIRES) for _ in range(3)])
    print(f"  (d) fire, event without hooks            {no_hooks * 1e6:7.3f} µs per event")
    print(f"      fire, empty registry                 {none_at_all * 1e6:7.3f} µs per event")
    if SANDBOX is None:
        print("  (e) sandboxed: not measured, no bwrap on this machine")


# --- hooks without a spawn per event -------------------------------------------------

# One script, both ways: persistent (a line per event, answered with its id) and spawned
# per event (one event on stdin, without a newline or an id).
WORKER = """\
import json, sys
for line in sys.stdin:
    event = json.loads(line)
    answer = {"decision": "allow"}
    if "id" in event:
        answer["id"] = event["id"]
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""
SH_LOOP = """while IFS= read -r line; do echo '{"decision": "allow"}'; done"""
SH_ONCE = """cat >/dev/null; echo '{"decision": "allow"}'"""
NOOP_MODULE = "def noop(event):\n    return None\n"
PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "ls -la"}}
PYTHON_FIRES = 20_000 if QUICK else 100_000
CPU_RUNS = 2 if QUICK else 5  # runs of the (f) blocks, for the median of their CPU figures
DAG_TASKS = 200


class RawPipes:
    """A raw NDJSON round trip over non-blocking pipes: encode and write a line, read
    and decode a line."""

    def __init__(self, argv: list[str], event: dict[str, Any]) -> None:
        self.event = event
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.stdin, self.stdout = self.popen.stdin.fileno(), self.popen.stdout.fileno()
        os.set_blocking(self.stdin, False)
        os.set_blocking(self.stdout, False)

    async def round_trip(self) -> None:
        os.write(self.stdin, json.dumps(self.event).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            await anyio.wait_readable(self.stdout)
            data += os.read(self.stdout, 65536)
        json.loads(data)

    def close(self) -> None:
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.popen.stdin.close()
        self.popen.wait()
        self.popen.stdout.close()


class RawStreams:
    """A raw NDJSON round trip over anyio's process streams."""

    def __init__(self, process: anyio.abc.Process, event: dict[str, Any]) -> None:
        self.process, self.event = process, event

    async def round_trip(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        await self.process.stdin.send(json.dumps(self.event).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            data += await self.process.stdout.receive()
        json.loads(data)


def ratio_row(label: str, figures: tuple[float, float], base: tuple[float, float]) -> str:
    (best, median), (base_best, base_median) = figures, base
    return (
        f"  {label:<44} best {ms(best)}  {best / base_best:6.2f}x"
        f"   median {ms(median)}  {median / base_median:6.2f}x"
    )


async def cpu_per_fire(registry: HookRegistry, n: int) -> float:
    """CPU seconds per ``fire`` (median of 5 blocks): what the hook path costs, whatever
    else the shared machine runs."""
    fire = firing(registry, "Bash")
    return statistics.median([(await timed(fire, n))[1] for _ in range(5)])


def layered_dag(tasks: int = DAG_TASKS, width: int = 10) -> DAG:
    """``tasks`` no-op tasks in layers of ``width``, each after 2 of the layer before."""

    async def noop() -> None:
        return None

    dag = DAG("bench")
    for i in range(tasks):
        layer, j = divmod(i, width)
        deps = [f"t{(layer - 1) * width + (j + k) % width}" for k in (0, 1)] if layer else []
        dag.add(Task(id=f"t{i}", fn=noop, deps=deps))
    return dag


def task_hooks(make: type[HookSpec], **fields: object) -> HookRegistry:
    return HookRegistry(
        [make(event=event, **fields) for event in ("TaskCreated", "TaskCompleted")]  # type: ignore[arg-type]
    )


async def dag_seconds(registry: HookRegistry | None, repeat: int) -> float:
    """Median seconds of a run of the DAG with ``registry``'s task hooks (or none)."""
    hooks = [registry.as_task_hooks()] if registry is not None else []
    times = []
    for _ in range(repeat):
        dag = layered_dag()
        started = time.perf_counter()
        result = await orchestra.run(dag, hooks=hooks, max_concurrency=64)
        times.append(time.perf_counter() - started)
        assert result.ok
    return statistics.median(times)


async def persistent_section(folder: Path) -> None:
    worker = str(Path(folder) / "worker.py")
    python = [sys.executable, worker]
    # The event a persistent hook is sent, the same size.
    event = {**event_data("PreToolUse", PAYLOAD, "bench", str(folder)), "id": 1}

    def registry_of(hook: CommandHook) -> HookRegistry:
        return HookRegistry([hook], project_dir=folder)

    persistent = registry_of(
        CommandHook(event="PreToolUse", args=tuple(python), persistent=True, on_error="continue")
    )
    spawned = registry_of(CommandHook(event="PreToolUse", args=tuple(python), on_error="continue"))
    sh_persistent = registry_of(
        CommandHook(event="PreToolUse", command=SH_LOOP, persistent=True, on_error="continue")
    )
    sh_spawned = registry_of(CommandHook(event="PreToolUse", command=SH_ONCE, on_error="continue"))
    pipes = RawPipes(python, event)
    async with await anyio.open_process(python) as process, persistent, sh_persistent:
        streams = RawStreams(process, event)
        fns = {
            "pipes": pipes.round_trip,
            "streams": streams.round_trip,
            "persistent": firing(persistent, "Bash"),
            "sh persistent": firing(sh_persistent, "Bash"),
        }
        for fn in fns.values():  # warm up: start the processes, fill the caches
            await per_call(fn, 20)
        cpu_runs: list[dict[str, float]] = []
        for _ in range(CPU_RUNS):  # the last run's wall figures are kept
            cpu_runs.append({})
            latency = await latencies(fns, cpu_runs[-1])
        cpu = {name: statistics.median(run[name] for run in cpu_runs) for name in fns}
        slow = {"spawned": firing(spawned, "Bash"), "sh spawned": firing(sh_spawned, "Bash")}
        for fn in slow.values():
            await per_call(fn, 2)
        rounds = 3 if QUICK else 10
        for name, fn in slow.items():
            values = [await per_call(fn, 3) for _ in range(rounds)]
            latency[name] = (min(values), statistics.median(values))
        assert process.stdin is not None
        await process.stdin.aclose()
    pipes.close()

    base = min(latency["pipes"], latency["streams"])  # the stricter baseline
    rows = (
        ("(f) raw NDJSON, non-blocking pipes", "pipes", base),
        ("    raw NDJSON, anyio process streams", "streams", base),
        ("    fire, persistent hook (Python loop)", "persistent", base),
        ("    fire, same script spawned per event", "spawned", latency["persistent"]),
        ("    fire, sh while-read loop", "sh persistent", latency["sh persistent"]),
        ("    fire, sh spawned per event", "sh spawned", latency["sh persistent"]),
    )
    print("  (f) ratios: rows 1-3 against the faster raw round trip; spawned against persistent")
    for label, key, against in rows:
        print(ratio_row(label, latency[key], against))
    cpu_base = min(cpu["pipes"], cpu["streams"])
    for label, key in (
        ("raw NDJSON, non-blocking pipes", "pipes"),
        ("raw NDJSON, anyio process streams", "streams"),
        ("fire, persistent hook (Python loop)", "persistent"),
    ):
        print(
            f"      CPU, {label:<39} {cpu[key] * 1e6:7.1f} µs per call  {cpu[key] / cpu_base:5.2f}x"
        )
    best_ratio = latency["persistent"][0] / base[0]
    median_ratio = latency["persistent"][1] / base[1]
    faster = latency["spawned"][1] / latency["persistent"][1]
    print(
        f"      persistent / raw: {cpu['persistent'] / cpu_base:.2f}x CPU (target <= 1.5x);"
        f" wall {best_ratio:.2f}x best, {median_ratio:.2f}x median;"
        f" spawned / persistent: {faster:.1f}x median (target >= 8x)"
    )

    sys.path.insert(0, str(folder))
    python_hook = HookRegistry([PythonHook(event="PreToolUse", callable="noop_hook:noop")])
    fixed = HookRegistry([PermissionHook(event="PreToolUse", decision="allow")])
    await cpu_per_fire(python_hook, 1000)
    noop = await cpu_per_fire(python_hook, PYTHON_FIRES)
    permission = await cpu_per_fire(fixed, PYTHON_FIRES)
    print(f"  (g) fire, python no-op hook      {noop * 1e6:6.2f} µs CPU per event (target <= 5 µs)")
    print(f"      fire, permission hook        {permission * 1e6:6.2f} µs CPU per event")

    repeat = 1 if QUICK else 3
    none = await dag_seconds(None, repeat)
    cases: dict[str, HookRegistry] = {
        "spawned per event (sh)": task_hooks(CommandHook, command=SH_ONCE),
        "spawned per event (Python)": task_hooks(CommandHook, args=tuple(python)),
        "persistent, 1 in flight": task_hooks(CommandHook, args=tuple(python), persistent=True),
        "persistent, 8 in flight": task_hooks(
            CommandHook, args=tuple(python), persistent=True, max_in_flight=8
        ),
        "in-process (type: python)": task_hooks(PythonHook, callable="noop_hook:noop"),
    }
    print(f"  (h) {DAG_TASKS}-task DAG, TaskCreated + TaskCompleted: per-task overhead")
    print(f"      no hooks                         {none / DAG_TASKS * 1e3:8.3f} ms per task")
    for label, registry in cases.items():
        if QUICK and "Python)" in label:
            continue
        async with registry:
            await dag_seconds(registry, 1)  # warm up: processes started
            took = await dag_seconds(registry, repeat)
        print(f"      {label:<32} {(took - none) / DAG_TASKS * 1e3:8.3f} ms per task")


PARALLEL_ROUNDS = 5 if QUICK else 15
SLOW = ("sleep 0.3", "sleep 0.3; true", "sleep 0.3 && :")  # distinct: not kept once


def parallel_sources(folder: Path) -> dict[str, HookRegistry]:
    """One 0.3 s handler; three from a Claude Code file; three orchestra guards."""
    handlers = [{"type": "command", "command": command} for command in SLOW]
    group = {"matcher": "Bash", "hooks": handlers}
    claude = folder / "parallel" / ".claude" / "settings.json"
    claude.parent.mkdir(parents=True, exist_ok=True)
    claude.write_text(json.dumps({"hooks": {"PreToolUse": [group]}}))
    single = folder / "parallel" / "single.json"
    single.write_text(json.dumps({"hooks": {"PreToolUse": [{**group, "hooks": handlers[:1]}]}}))
    guards = folder / "parallel" / "orchestra.yaml"
    lines = [f"        - {{type: command, phase: guard, command: '{c}'}}" for c in SLOW]
    guards.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n" + "\n".join(lines) + "\n"
    )
    return {
        "one handler": load(single, project_dir=folder),
        "3 handlers, Claude Code settings.json": load(claude, project_dir=folder),
        "3 orchestra guards": load(guards, project_dir=folder),
    }


async def parallel_section(folder: Path) -> None:
    """(i): 3 matching 0.3 s handlers against one, in interleaved rounds."""
    registries = parallel_sources(folder)
    assert all(
        len(r.hooks_for("PreToolUse", {"tool_name": "Bash"})) == 3
        for r in list(registries.values())[1:]
    )
    samples: dict[str, list[float]] = {name: [] for name in registries}
    for _ in range(PARALLEL_ROUNDS):
        for name, registry in registries.items():
            samples[name].append(await per_call(firing(registry, "Bash"), 1))
    base = samples["one handler"]
    print(f"  (i) 3 matching 0.3 s PreToolUse handlers, {PARALLEL_ROUNDS} interleaved rounds")
    print(f"      one handler                            median {ms(statistics.median(base))}")
    for name, values in list(samples.items())[1:]:
        ratios = [value / single for value, single in zip(values, base, strict=True)]
        median = statistics.median(ratios)
        verdict = "ok" if median <= 1.2 else "OVER TARGET"
        print(
            f"      {name:<38} median {ms(statistics.median(values))}  {median:5.2f}x"
            f" (min {min(ratios):.2f}x, max {max(ratios):.2f}x; target <= 1.2x: {verdict})"
        )


# --- Python hooks: async def against def (HookChain, the seam every engine calls) ---------

CHAIN_CALLS = 2_000 if QUICK else 10_000  # calls per block
CHAIN_ROUNDS = 5 if QUICK else 9  # interleaved rounds of blocks
DAG_HOOKED_TASKS = 1_000 if QUICK else 2_000


class DefHook(orchestra.TaskHooks):
    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    def after_execute(self, ctx: orchestra.TaskHookContext, result: object) -> None:
        return None

    def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
        return None


class AsyncHook(orchestra.TaskHooks):
    async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        return None

    async def after_execute(self, ctx: orchestra.TaskHookContext, result: object) -> None:
        return None

    async def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
        return None


def spread(values: list[float], scale: float = 1e6) -> str:
    """``median (min-max)`` of ``values``, scaled (µs by default)."""
    return (
        f"{statistics.median(values) * scale:7.2f} "
        f"({min(values) * scale:.2f}-{max(values) * scale:.2f})"
    )


def verdict(ratio: float, target: float) -> str:
    return f"target <= {target}x: {'ok' if ratio <= target else 'MISSED'}"


async def chain_cpu(chain: orchestra.HookChain, ctx: orchestra.TaskHookContext) -> float:
    """CPU seconds per ``chain.call("before_execute", ctx)``."""
    call = chain.call
    cpu = time.process_time()
    for _ in range(CHAIN_CALLS):
        await call("before_execute", ctx)
    return (time.process_time() - cpu) / CHAIN_CALLS


async def dag_cpu(dag: DAG, hooks: list[object]) -> float:
    """CPU seconds per task of a run of ``dag`` with ``hooks``."""
    cpu = time.process_time()
    result = await orchestra.run(dag, hooks=hooks)
    assert result.ok
    return (time.process_time() - cpu) / len(result.states)


async def async_hooks_section() -> None:
    """(j) and (k): ``async def`` hooks at the default timeout against the same as ``def``."""
    ctx = orchestra.TaskHookContext(
        task=Task(id="t", fn=lambda: None), attempt=1, executor=None, run_id="bench"
    )
    print("  (j) HookChain.call, no-op hooks, CPU µs per call: median (min-max) of")
    print(f"      {CHAIN_ROUNDS} interleaved rounds of {CHAIN_CALLS} calls")
    for k in (1, 5):
        chains = {
            "def": orchestra.HookChain([DefHook() for _ in range(k)]),
            "async, timeout 60 s": orchestra.HookChain([AsyncHook() for _ in range(k)]),
            "async, no timeout": orchestra.HookChain([AsyncHook() for _ in range(k)], timeout=None),
        }
        samples: dict[str, list[float]] = {name: [] for name in chains}
        for chain in chains.values():
            await chain_cpu(chain, ctx)  # warm up
        for _ in range(CHAIN_ROUNDS):
            for name, chain in chains.items():
                samples[name].append(await chain_cpu(chain, ctx))
        base = statistics.median(samples["def"])
        timed = statistics.median(samples["async, timeout 60 s"])
        untimed = statistics.median(samples["async, no timeout"])
        for name, values in samples.items():
            ratio = statistics.median(values) / base
            print(f"      {k} hook(s) {name:<20} {spread(values)}  {ratio:5.2f}x def")
        print(
            f"      {k} hook(s) the timeout's cost: 60 s / none = {timed / untimed:.2f}x"
            " (informative: a coroutine stepped costs more than one awaited)"
        )

    dag = DAG("hooked")
    for i in range(DAG_HOOKED_TASKS):
        dag.add(Task(id=f"t{i}", fn=lambda: None))
    print(
        f"  (k) {DAG_HOOKED_TASKS}-task run of no-op tasks, hooks on before_execute,"
        " after_execute and on_end (default timeout):"
    )
    print(f"      CPU µs per task, median (min-max) of {CHAIN_ROUNDS} interleaved runs")
    for k in (1, 5):
        contenders: dict[str, list[object]] = {
            "no hooks": [],
            "def": [DefHook() for _ in range(k)],
            "async def": [AsyncHook() for _ in range(k)],
        }
        per_task: dict[str, list[float]] = {name: [] for name in contenders}
        for hooks in contenders.values():
            await dag_cpu(dag, hooks)  # warm up
        for _ in range(CHAIN_ROUNDS):
            for name, hooks in contenders.items():
                per_task[name].append(await dag_cpu(dag, hooks))
        base = statistics.median(per_task["no hooks"])
        for name, values in per_task.items():
            ratio = statistics.median(values) / base
            print(f"      {k} hook(s) {name:<10} {spread(values)}  {ratio:5.2f}x no hooks")


# --- several matching hooks on one event (distinct commands, so none is kept once) ---------

MATCHING = ("true", ":", "exit 0", "true;", ": ;")  # five distinct no-op commands
MATCHING_ROUNDS = 8 if QUICK else 30


def matching_registry(folder: Path, event: str, commands: tuple[str, ...]) -> HookRegistry:
    """An orchestra.yaml with ``commands`` as hooks matching ``Bash`` on ``event``."""
    lines = [f"        - {{type: command, command: '{c}'}}" for c in commands]
    path = folder / "matching" / f"{event}-{len(commands)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"hooks:\n  {event}:\n    - matcher: Bash\n      hooks:\n" + "\n".join(lines) + "\n"
    )
    return load(path, project_dir=folder)


async def matching_section(folder: Path) -> None:
    """(l): 5 matching command hooks on one event against 1, in interleaved rounds.

    On PostToolUse (its hooks only judge: they run at once) the five should cost far
    less than five one after another: target at most 2.5x one hook. On PreToolUse (hooks
    without a phase may rewrite the input: they run in order) the cost is linear: target
    at most 5.5x one hook (nothing beyond the five processes).
    """
    payload = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "ok"}
    targets = {"PostToolUse": 2.5, "PreToolUse": 5.5}
    print("  (l) 5 matching command hooks (distinct no-op commands) against 1, wall per event,")
    print(f"      median (min-max) of {MATCHING_ROUNDS} interleaved rounds")
    for event, target in targets.items():
        one = matching_registry(folder, event, MATCHING[:1])
        five = matching_registry(folder, event, MATCHING)
        assert len(five.hooks_for(event, payload)) == 5

        async def fire(registry: HookRegistry, event: str = event) -> None:
            outcome = await registry.fire(event, payload)
            assert not outcome.errors, outcome.errors

        samples: dict[str, list[float]] = {"1 hook": [], "5 hooks": []}
        for registry in (one, five):
            await fire(registry)  # warm up
        for _ in range(MATCHING_ROUNDS):
            for name, registry in (("1 hook", one), ("5 hooks", five)):
                started = time.perf_counter()
                await fire(registry)
                samples[name].append(time.perf_counter() - started)
        ratios = [f / o for f, o in zip(samples["5 hooks"], samples["1 hook"], strict=True)]
        ratio = statistics.median(ratios)
        print(
            f"      {event:<12} 1 hook {spread(samples['1 hook'], 1e3)} ms,"
            f" 5 hooks {spread(samples['5 hooks'], 1e3)} ms: {ratio:.2f}x"
            f" ({min(ratios):.2f}-{max(ratios):.2f}; {verdict(ratio, target)})"
        )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "orchestra.yaml"
        config.write_text(CONFIG)
        (Path(folder) / "worker.py").write_text(WORKER)
        (Path(folder) / "noop_hook.py").write_text(NOOP_MODULE)
        registry = load(config, project_dir=folder)
        empty = HookRegistry()
        print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
        print(f"latency: {ROUNDS} blocks of {BLOCK} calls per function, per call figures")
        for backend in ("asyncio", "trio"):
            print(f"{backend}:")
            anyio.run(main, registry, empty, backend=backend)
            anyio.run(persistent_section, Path(folder), backend=backend)
            anyio.run(parallel_section, Path(folder), backend=backend)
            anyio.run(async_hooks_section, backend=backend)
            anyio.run(matching_section, Path(folder), backend=backend)
