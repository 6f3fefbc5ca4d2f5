"""Arc's http, prompt and agent hooks (fabro, seed 001) in run.toml, as Arc writes them.

The seed's words: an http hook POSTs "the event context as JSON"; "HTTP hook returns
non-2xx: proceeds", "HTTP hook connection fails: proceeds"; prompt and agent hooks
answer ``{"ok": true}`` / ``{"ok": false, "reason": ...}``, model "Defaults to haiku",
timeouts 30 s (prompt) and 60 s (agent, http), ``max_tool_rounds`` "Default: 50", and
"If the LLM fails to produce valid JSON, the hook fails open (proceeds)".
"""

from __future__ import annotations

import contextlib
import json
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.model_server import serving

import orchestra
from orchestra import ConfigError, TaskState
from orchestra.skills import JudgeRequest, OpenAICompatibleJudge, load

pytestmark = pytest.mark.anyio


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@contextlib.contextmanager
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An HTTP server on 127.0.0.1 answering Arc decisions by path; what it was sent."""
    seen: list[dict[str, Any]] = []
    answers = {
        "/notify": (204, b""),
        "/skip": (200, b'{"decision": "skip", "reason": "frozen for the release"}'),
        "/block": (200, b'{"decision": "block", "reason": "change freeze"}'),
        "/500": (500, b"internal error"),
        "/prose": (200, b"thanks!"),
    }

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            status, answer = answers[self.path]
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def pipeline(ran: list[str]) -> orchestra.DAG:
    dag = orchestra.DAG("ci-pipeline")

    @dag.task(metadata={"type": "agent"})
    def implement() -> str:
        ran.append("implement")
        return "code"

    @dag.task(deps=[implement], metadata={"type": "command"})
    def deploy(implement: str) -> str:
        ran.append("deploy")
        return f"deployed {implement}"

    return dag


def http_hook(url: str, event: str, *, extra: str = "") -> str:
    return f"""
    [[hooks]]
    event = "{event}"
    type = "http"
    url = "{url}"
    tls = "off"
    allow_private_network = true
    {extra}
    """


async def test_an_http_hook_posts_arcs_context_as_the_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_KEY", "k-123")
    with webhook() as (base, seen):
        extra = 'allowed_env_vars = ["API_KEY"]\n[hooks.headers]\nAuthorization = "Bearer $API_KEY"'
        path = write(
            tmp_path / "run.toml", http_hook(f"{base}/notify", "stage_complete", extra=extra)
        )
        ran: list[str] = []
        result = await orchestra.run(
            pipeline(ran), hooks=[load(path, project_dir=tmp_path).as_task_hooks()]
        )
    assert result.ok, result.hook_errors
    assert ran == ["implement", "deploy"]
    assert [json.loads(s["body"]) for s in seen] == [  # the raw context, Arc's shape
        {
            "event": "stage_complete",
            "run_id": result.run_id,
            "workflow_name": "ci-pipeline",
            "cwd": str(tmp_path),
            "node_id": node,
            "handler_type": kind,
            "status": "succeeded",
            "attempt": 1,
            "max_attempts": 1,
        }
        for node, kind in (("implement", "agent"), ("deploy", "command"))
    ]
    assert seen[0]["headers"]["Authorization"] == "Bearer k-123"
    assert seen[0]["headers"]["Content-Type"] == "application/json"
    assert result.hook_errors == ()


async def test_a_2xx_decision_counts_and_failures_proceed(tmp_path: Path) -> None:
    with webhook() as (base, seen):
        path = write(
            tmp_path / "run.toml",
            http_hook(f"{base}/skip", "stage_start", extra='matcher = "^deploy$"')
            + http_hook(f"{base}/500", "stage_start", extra='matcher = "^implement$"')
            + http_hook(f"{base}/prose", "stage_start", extra='matcher = "^implement$"')
            + http_hook("http://127.0.0.1:9/down", "stage_start")  # nothing listens there
            + http_hook(f"{base}/block", "stage_complete"),  # not blocking: no say
        )
        ran: list[str] = []
        result = await orchestra.run(
            pipeline(ran), hooks=[load(path, project_dir=tmp_path).as_task_hooks()]
        )
    assert ran == ["implement"]  # deploy skipped by the webhook's 2xx decision, only it
    assert result.ok
    assert result.states["deploy"] is TaskState.SUCCEEDED
    assert result.messages["deploy"] == ("stage skipped: frozen for the release",)
    errors = [str(e) for e in result.hook_errors]
    # a non-2xx and a refused connection proceed, each kept as a hook error; a 2xx
    # body that is no decision ("thanks!") proceeds silently, as Arc reads it
    assert len(errors) == 3, errors
    assert any("http 500: internal error" in e for e in errors)
    assert sum("http request failed" in e for e in errors) == 2  # once per stage
    assert sorted(s["path"] for s in seen) == ["/500", "/block", "/prose", "/skip"]


async def test_a_blocking_http_hook_blocks_a_stage(tmp_path: Path) -> None:
    with webhook() as (base, _):
        path = write(tmp_path / "run.toml", http_hook(f"{base}/block", "stage_start"))
        ran: list[str] = []
        result = await orchestra.run(
            pipeline(ran), hooks=[load(path, project_dir=tmp_path).as_task_hooks()]
        )
    assert ran == []
    assert result.states["implement"] is TaskState.FAILED
    assert "change freeze" in str(result.errors["implement"])
    assert result.states["deploy"] is TaskState.UPSTREAM_FAILED


async def test_an_http_hook_to_an_internal_address_needs_its_door(tmp_path: Path) -> None:
    with webhook() as (base, seen):
        path = write(
            tmp_path / "run.toml",
            f"""
            [[hooks]]
            event = "stage_start"
            type = "http"
            url = "{base}/block"
            tls = "off"
            """,
        )
        ran: list[str] = []
        result = await orchestra.run(
            pipeline(ran), hooks=[load(path, project_dir=tmp_path).as_task_hooks()]
        )
    assert seen == []  # never sent: orchestra's network default (Arc has no such check)
    assert result.ok  # and Arc's fail-open: the stages ran
    assert ran == ["implement", "deploy"]
    assert all("private" in str(e) or "loopback" in str(e) for e in result.hook_errors)
    assert len(result.hook_errors) == 2


def _model(prompt: str) -> str:
    """The fake model: it objects to deploying on a Friday, and rambles on GARBAGE."""
    if "GARBAGE" in prompt:
        return "Looks fine to me!"
    if '"node_id": "deploy"' in prompt:
        return '{"ok": false, "reason": "no deploys on Friday"}'
    return '{"ok": true}'


async def test_a_prompt_hook_asks_the_judge_with_arcs_words(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        name = "safety-check"
        event = "stage_start"
        type = "prompt"
        prompt = "Review the event context. Is there any reason this stage should not proceed?"
        blocking = true
        """,
    )
    with serving(_model) as (url, seen):
        registry = load(path, judge=OpenAICompatibleJudge(url, "small", api_key_env=None))
        (hook,) = registry.hooks
        assert hook.timeout == 30.0  # Arc's prompt default
        ran: list[str] = []
        result = await orchestra.run(pipeline(ran), hooks=[registry.as_task_hooks()])
    assert ran == ["implement"]
    assert result.states["deploy"] is TaskState.FAILED
    assert "no deploys on Friday" in str(result.errors["deploy"])
    bodies = [s["body"] for s in seen]
    assert [b["model"] for b in bodies] == ["haiku", "haiku"]  # "Defaults to haiku"
    asked = bodies[0]["messages"][-1]["content"]
    head, _, context = asked.partition("\n\nEvent context:\n")
    assert head == (
        "Hook prompt: Review the event context. Is there any reason this stage should not proceed?"
    )
    assert json.loads(context)["node_id"] == "implement"
    assert json.loads(context)["event"] == "stage_start"


async def test_prompt_hooks_fail_open(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_start"
        type = "prompt"
        prompt = "GARBAGE please"
        model = "sonnet"
        blocking = true

        [[hooks]]
        event = "stage_start"
        type = "prompt"
        prompt = "SLOW answer"
        blocking = true
        timeout_ms = 500
        """,
    )
    with serving(_model) as (url, seen):
        judge = OpenAICompatibleJudge(url, "small", api_key_env=None)
        for registry in (load(path, judge=judge), load(path)):  # and with no judge at all
            ran: list[str] = []
            result = await orchestra.run(pipeline(ran), hooks=[registry.as_task_hooks()])
            assert ran == ["implement", "deploy"]  # proceeds, as Arc
            assert result.ok
            assert len(result.hook_errors) == 4  # two hooks, two stages: each kept
    errors = [str(e) for e in result.hook_errors]
    assert all("no judge is configured" in e for e in errors)
    assert {s["body"]["model"] for s in seen} == {"sonnet", "haiku"}


async def test_a_non_blocking_prompt_hook_is_asked_and_changes_nothing(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_start"
        type = "prompt"
        prompt = "Anything odd?"
        blocking = false
        """,
    )
    with serving(_model) as (url, seen):
        registry = load(path, judge=OpenAICompatibleJudge(url, "small", api_key_env=None))
        ran: list[str] = []
        result = await orchestra.run(pipeline(ran), hooks=[registry.as_task_hooks()])
    assert len(seen) == 2
    assert ran == ["implement", "deploy"]  # the model said no to deploy: not blocking
    assert result.ok


async def test_an_agent_hook_gets_its_rounds_model_and_timeout(tmp_path: Path) -> None:
    asked: list[JudgeRequest] = []

    async def agent(request: JudgeRequest) -> dict[str, Any]:
        asked.append(request)
        return {"ok": True}

    agent.supports_agent = True  # type: ignore[attr-defined]
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "stage_complete"
        type = "agent"
        prompt = "Check the stage's work."
        matcher = "^agent$"

        [[hooks]]
        event = "stage_complete"
        type = "agent"
        prompt = "Run the test suite."
        model = "sonnet"
        max_tool_rounds = 20
        timeout_ms = 120000
        matcher = "^command$"
        """,
    )
    registry = load(path, judge=agent)
    result = await orchestra.run(pipeline([]), hooks=[registry.as_task_hooks()])
    assert result.ok
    seen = [(r.agent, r.model, r.max_tool_rounds, r.timeout, r.event) for r in asked]
    assert seen == [
        (True, "haiku", 50, 60.0, "stage_complete"),  # Arc's defaults
        (True, "sonnet", 20, 120.0, "stage_complete"),
    ]
    assert asked[1].data["node_id"] == "deploy"
    assert asked[1].prompt.startswith("Hook prompt: Run the test suite.\n\nEvent context:\n")
    single = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", api_key_env=None)
    with pytest.raises(ConfigError, match="agent hooks need one with supports_agent = True"):
        load(path, judge=single)


def test_bad_http_prompt_and_agent_hooks_are_refused_with_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.toml",
        """
        [[hooks]]
        event = "run_complete"
        type = "http"
        url = "http://hooks.example.com/done"

        [[hooks]]
        event = "run_complete"
        type = "http"
        url = "https://hooks.example.com/done"
        urll = "x"

        [hooks.headers]
        Authorization = "Bearer $API_KEY"

        [[hooks]]
        event = "stage_start"
        type = "prompt"
        command = "true"

        [[hooks]]
        event = "run_complete"
        type = "agent"
        prompt = "verify"
        max_tool_rounds = 0

        [[hooks]]
        event = "stage_start"
        type = "webhook"
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load(path)
    text = str(caught.value)
    assert f"{path}:4: hooks[0].url: plain http is refused; use https, or set tls: off" in text
    assert f"{path}:10: hooks[1].urll: unknown field for an Arc http hook" in text
    assert "hooks[1].headers.Authorization: $API_KEY is not in allowed_env_vars" in text
    assert "hooks[2].command: a prompt hook has no command" in text
    assert "hooks[2].prompt: missing" in text
    assert f"{path}:24: hooks[3].max_tool_rounds: expected a whole number of rounds >= 1" in text
    assert "hooks[4].type: unknown hook type 'webhook' (command, http, prompt or agent)" in text


async def test_the_seeds_full_example_loads_and_runs_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    check = scripts / "check-env.sh"
    check.write_text(
        '#!/bin/sh\n[ -n "$DEPLOY_TOKEN" ] || { echo "no DEPLOY_TOKEN" >&2; exit 2; }\n'
    )
    fmt = scripts / "fmt.sh"
    fmt.write_text('#!/bin/sh\nprintf "%s %s\\n" "$ARC_EVENT" "$(cat)" >> fmt.log\n')
    for file in (check, fmt):
        file.chmod(0o755)
    monkeypatch.setenv("DEPLOY_TOKEN", "t0ken")  # a host resource: sandbox = false sees it
    with webhook() as (base, posted), serving(_model) as (url, asked):
        path = write(
            tmp_path / "run.toml",
            f"""
            # Validate environment before the run starts
            [[hooks]]
            name = "env-check"
            event = "run_start"
            command = "./scripts/check-env.sh"
            blocking = true
            sandbox = false

            # Notify Slack when a stage completes (here: a webhook on 127.0.0.1)
            [[hooks]]
            name = "slack-notify"
            event = "stage_complete"
            type = "http"
            url = "{base}/notify"
            tls = "off"
            allow_private_network = true
            blocking = false

            # LLM guardrail before agent stages
            [[hooks]]
            name = "safety-check"
            event = "stage_start"
            type = "prompt"
            prompt = "Review the event context. Is there any reason this stage should not proceed?"
            model = "haiku"
            matcher = "^agent$"
            blocking = true
            timeout_ms = 15000

            # Post-run verification agent
            [[hooks]]
            name = "verify"
            event = "run_complete"
            type = "agent"
            prompt = "Run the test suite and verify all tests pass. Report any failures."
            model = "sonnet"
            max_tool_rounds = 20
            blocking = true
            timeout_ms = 120000

            # Auto-format files after writes
            [[hooks]]
            name = "cargo-fmt"
            event = "post_tool_use"
            command = "./scripts/fmt.sh"
            matcher = "write_file|edit_file|apply_patch"
            blocking = true
            """,
        )
        single = OpenAICompatibleJudge(url, "m", api_key_env=None)
        verified: list[JudgeRequest] = []

        async def judge(request: JudgeRequest) -> Any:
            if request.agent:
                verified.append(request)
                return {"ok": True, "reason": "all tests pass"}
            return await single(request)

        judge.supports_agent = True  # type: ignore[attr-defined]
        registry = load(path, project_dir=tmp_path, judge=judge)
        assert [h.name for h in registry.hooks] == [  # type: ignore[attr-defined]
            "env-check",
            "slack-notify",
            "safety-check",
            "verify",
            "cargo-fmt",
        ]

        @registry.guard("write_file")
        def write_file(path: str, text: str) -> str:
            (tmp_path / path).write_text(text)
            return f"wrote {path}"

        dag = orchestra.DAG("ci-pipeline")

        @dag.task(metadata={"type": "agent"})
        def implement() -> str:
            return write_file(path="main.rs", text="fn main() {}\n")

        @dag.task(deps=[implement], metadata={"type": "command"})
        def test(implement: str) -> str:
            return f"tests pass after: {implement}"

        result = await orchestra.run(dag, hooks=[registry.as_task_hooks()])
    assert result.ok, (result.errors, result.hook_errors)
    assert result.hook_errors == ()
    assert result.outputs["test"] == "tests pass after: wrote main.rs"
    assert [json.loads(p["body"])["node_id"] for p in posted] == ["implement", "test"]
    assert len(asked) == 1  # the guardrail asked about the agent stage only
    assert '"node_id": "implement"' in asked[0]["body"]["messages"][-1]["content"]
    (done,) = verified
    assert (done.event, done.model, done.max_tool_rounds, done.timeout) == (
        "run_complete",
        "sonnet",
        20,
        120.0,
    )
    (formatted,) = (tmp_path / "fmt.log").read_text().splitlines()
    event, _, context = formatted.partition(" ")
    assert event == "post_tool_use"
    assert json.loads(context)["tool_name"] == "write_file"
    assert json.loads(context)["tool_output"] == "wrote main.rs"  # Arc's field
