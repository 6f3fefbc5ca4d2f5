"""The one seam every engine drives hooks through: the attempt driver and the tool-call protocol.

A bridge (an integration, or orchestra's own engines) writes no attempt loop: it feeds an
``AttemptDriver``'s ``TaskAttempts`` what happened (``started``, ``succeeded(output)``,
``failed(error)``) and carries out what it answers:

- ``DoRun(inputs)``: run the body with these inputs;
- ``DoSleep(delay)``: wait, then start the next attempt (the answer to every ``Again``:
  ``Retry``, and any decision declared as one);
- ``DoGive(output)``: the work SUCCEEDED with this output (also when a hook gave it:
  ``Replace(GiveOutput(value))`` in ``before_execute``, a graph executor's ``block``);
- ``DoSkip(reason)``: the work is given up, the run goes on;
- ``DoFail(error, reason)``: the work FAILED: raise ``error``.

The driver owns the merge (``HookChain``), the attempt cap (``DEFAULT_MAX_ATTEMPTS``), the
run's ``RetryBudget``, the reasons and ``on_end`` exactly once; it has a sync form (for
engines that call hooks from synchronous code) and an async one.

A tool call (the core's ``@registry.guard`` and every integration's tool path) goes
through ``ToolHooks``, written once without I/O (``pre_flow``, ``post_flow``,
``failed_flow`` yield ``Fire``/``Consult`` effects, as httpx's ``Auth.auth_flow``) and
driven by thin async and sync drivers::

    hooks = ToolHooks(registry)                          # once per bridge
    call = ToolCall("Bash", {"command": "ls"}, tool_use_id=engine_call_id)
    with tool_span(call.tool_name, call_id=call.tool_use_id):
        answer = await hooks.pre(call, can_pause=engine_can_pause)
        # Proceed(tool_input): run the tool with it, then ``await hooks.post(...)``
        # Mock(output): the tool is not run; ``await hooks.post(call, output, mocked=True)``
        # Refuse(reason, retry): tell the caller (PermissionDenied already fired)
        # Ask(...): pause; ``answer.request(call)`` is the pending request
        # a tool that raised: ``await hooks.failed(call, error)`` -> Raise | Refuse

A paused call resumes with a person's answer: ``approval = resume(pending, answer)``
checks it (``{"decision": "approve"}``, ``{"decision": "deny", "reason": ...}``,
``{"decision": "edit", "tool_input": {...}}``; an ``args_sha256`` that is not the pending
call's is a refusal), and ``await hooks.resume(call, approval)`` answers as ``pre`` does:
the pending input once, a refusal, or the edit judged again by every guard.

One refusal text (``Refuse.reason``: the hook's reason, else ``denied by a PreToolUse
hook at FILE:LINE``; an unanswered ``ask``: its reason, else ``needs approval
(FILE:LINE)``), one pending-request shape (``Ask.request``: ``tool_name``,
``tool_input``, ``reason``, ``hook_id``, ``args_sha256``), one span (``tool_span``:
``execute_tool {name}``).

A bridge whose engine runs the tool itself keeps its hooks in a ``ToolChains`` (the
registry's ``ToolHooks``, the ``TaskHooks`` and ``SubagentHooks`` chains, sorted by
``split_hooks``) and answers ``PreToolUse`` with ``judge``: the guards, then its
``before_*`` moment, whose new input the guards judge again (``MAX_REJUDGE`` rounds).

A bridge whose engine has runs of its own keeps each run in a ``RunRecord``: every task's
state, attempts, error, reason and duration, the hook errors, the run span and its
attempts' spans, and the ``RunResult`` that ``after_run`` gets; the driver settles each
task into it (``settle=record.settled``, ``context=record.attempt_context``,
``spans=record.spans(task_id)``).

A bridge that retries a whole agent run on ``SubagentHooks.on_failure`` iterates a
``RunAttempts`` (``for attempt in flow``): ``failed(error, again, veto)`` answers
``DoSleep(delay)`` or None (give up, ``refused`` says why a ``Retry`` was not carried
out); it owns the attempt number, the errors so far, the cap and the ``Stop`` segments.

The ambient policy (``policy_scope``, ``resolve_policy``, ``current_policy``): guarded
work carries its registry and hooks in a context variable; a bridge started inside it
without its own is guarded by the same policy, part by part.

Imports: ``orchestra.bridge`` sits above ``orchestra.dag``, ``orchestra.agents`` and
``orchestra.skills`` (it may import them and the layers below), and none of them imports
it: the scheduler and the dispatcher share the driver's decision rule through
``orchestra._attempts``, and ``@registry.guard`` the tool-call protocol through
``orchestra._tool_call``, ``_tool_flow``, ``_tool_hooks`` and ``_ambient`` (which import
only ``orchestra._errors`` and ``orchestra.tracing``), below all of them. Integrations
import it (public names only).
"""

from orchestra._ambient import Policy as Policy
from orchestra._ambient import current_policy as current_policy
from orchestra._ambient import policy_scope as policy_scope
from orchestra._ambient import reset_policy as reset_policy
from orchestra._ambient import resolve_policy as resolve_policy
from orchestra._ambient import set_policy as set_policy
from orchestra._approval import DECISIONS as DECISIONS
from orchestra._approval import Approval as Approval
from orchestra._approval import resume as resume
from orchestra._attempts import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from orchestra._attempts import RetryBudget as RetryBudget
from orchestra._decisions import Again as Again
from orchestra._decisions import GiveOutput as GiveOutput
from orchestra._exports import export as _export
from orchestra._spending import RunBudgets as RunBudgets
from orchestra._spending import budgets_of as budgets_of
from orchestra._spending import charge_model_end as charge_model_end
from orchestra._spending import charge_model_start as charge_model_start
from orchestra._spending import enter_budgets as enter_budgets
from orchestra._spending import open_budgets as open_budgets
from orchestra._tool_call import DENIED_PREFIX as DENIED_PREFIX
from orchestra._tool_call import Ask as Ask
from orchestra._tool_call import FailedAnswer as FailedAnswer
from orchestra._tool_call import Mock as Mock
from orchestra._tool_call import PreAnswer as PreAnswer
from orchestra._tool_call import Proceed as Proceed
from orchestra._tool_call import Raise as Raise
from orchestra._tool_call import Refuse as Refuse
from orchestra._tool_call import ToolCall as ToolCall
from orchestra._tool_call import args_sha256 as args_sha256
from orchestra._tool_flow import Consult as Consult
from orchestra._tool_flow import Effect as Effect
from orchestra._tool_flow import Fire as Fire
from orchestra._tool_flow import ask_reason as ask_reason
from orchestra._tool_flow import blocked_reason as blocked_reason
from orchestra._tool_flow import deny_reason as deny_reason
from orchestra._tool_flow import error_fields as error_fields
from orchestra._tool_flow import failed_flow as failed_flow
from orchestra._tool_flow import mark_decision as mark_decision
from orchestra._tool_flow import post_flow as post_flow
from orchestra._tool_flow import post_tool_use_payload as post_tool_use_payload
from orchestra._tool_flow import pre_flow as pre_flow
from orchestra._tool_flow import refuse_flow as refuse_flow
from orchestra._tool_hooks import AskCallback as AskCallback
from orchestra._tool_hooks import OutcomeCallback as OutcomeCallback
from orchestra._tool_hooks import ToolHooks as ToolHooks
from orchestra._tool_hooks import run_blocking as run_blocking
from orchestra._tool_span import set_tool_result as set_tool_result
from orchestra._tool_span import tool_span as tool_span
from orchestra.bridge._answers import Answer as Answer
from orchestra.bridge._answers import DoFail as DoFail
from orchestra.bridge._answers import DoGive as DoGive
from orchestra.bridge._answers import DoRun as DoRun
from orchestra.bridge._answers import DoSkip as DoSkip
from orchestra.bridge._answers import DoSleep as DoSleep
from orchestra.bridge._answers import Ended as Ended
from orchestra.bridge._answers import carry as carry
from orchestra.bridge._answers import keep as keep
from orchestra.bridge._attempts import AttemptDriver as AttemptDriver
from orchestra.bridge._attempts import ContextFactory as ContextFactory
from orchestra.bridge._attempts import SpanFactory as SpanFactory
from orchestra.bridge._attempts import TaskAttempts as TaskAttempts
from orchestra.bridge._chains import DISPATCH_AS_TOOL as DISPATCH_AS_TOOL
from orchestra.bridge._chains import MAX_REJUDGE as MAX_REJUDGE
from orchestra.bridge._chains import TOOL_AS_TASK as TOOL_AS_TASK
from orchestra.bridge._chains import Before as Before
from orchestra.bridge._chains import Carries as Carries
from orchestra.bridge._chains import ToolChains as ToolChains
from orchestra.bridge._chains import judge as judge
from orchestra.bridge._chains import no_agents as no_agents
from orchestra.bridge._chains import split_hooks as split_hooks
from orchestra.bridge._run_attempts import RunAttempts as RunAttempts
from orchestra.bridge._runs import RunRecord as RunRecord

__all__ = [
    "DECISIONS",
    "DEFAULT_MAX_ATTEMPTS",
    "DENIED_PREFIX",
    "DISPATCH_AS_TOOL",
    "MAX_REJUDGE",
    "TOOL_AS_TASK",
    "Again",
    "Answer",
    "Approval",
    "Ask",
    "AskCallback",
    "AttemptDriver",
    "Before",
    "Carries",
    "Consult",
    "ContextFactory",
    "DoFail",
    "DoGive",
    "DoRun",
    "DoSkip",
    "DoSleep",
    "Effect",
    "Ended",
    "FailedAnswer",
    "Fire",
    "GiveOutput",
    "Mock",
    "OutcomeCallback",
    "Policy",
    "PreAnswer",
    "Proceed",
    "Raise",
    "Refuse",
    "RetryBudget",
    "RunAttempts",
    "RunBudgets",
    "RunRecord",
    "SpanFactory",
    "TaskAttempts",
    "ToolCall",
    "ToolChains",
    "ToolHooks",
    "args_sha256",
    "ask_reason",
    "blocked_reason",
    "budgets_of",
    "carry",
    "charge_model_end",
    "charge_model_start",
    "current_policy",
    "deny_reason",
    "enter_budgets",
    "error_fields",
    "failed_flow",
    "judge",
    "keep",
    "mark_decision",
    "no_agents",
    "open_budgets",
    "policy_scope",
    "post_flow",
    "post_tool_use_payload",
    "pre_flow",
    "refuse_flow",
    "reset_policy",
    "resolve_policy",
    "resume",
    "run_blocking",
    "set_policy",
    "set_tool_result",
    "split_hooks",
    "tool_span",
]

_export(globals())
