"""The one-policy conformance matrix: the same cells run over every engine's adapter.

The tool half (``TOOL_CELLS``, ``ToolEngine``, ``check_tool_cell``): deny, rewrite, mock,
a ``PostToolUse`` rewrite, audit (``enforce: false``), ask where the engine can pause, a
raising and a hanging hook per policy (a guard fails closed, a plain hook fails open),
one trace; ``tool_matrix_row`` renders an engine's row of docs/howto/one-policy.md.

The task half (``TASK_CELLS``, ``TaskEngine``, ``check_task_cell``): retries, skips by
the engine's own tags, fail, replace, a given output, ``on_end`` once, a raising and a
hanging hook per policy, one trace. Each integration's tests implement ``TaskEngine``
and check every cell; a cell an engine cannot do is listed, with the reason, in its
``cannot``. ``EndRecorder`` keeps ``on_end``'s states, for an engine that raises nothing
for work its hooks gave up. See the how-to "Adding an engine".

``check_pending_request`` checks a paused call's pending request (``PENDING_FIELDS``):
every engine's approval tests hold their engine's request to the one shape with it.
``check_budget_trace`` checks that a run's span carries its budget use as ``orchestra
trace show`` and ``orchestra trace report`` read it.
"""

from orchestra._exports import export as _export
from orchestra.bridge.testing._budget_trace import check_budget_trace as check_budget_trace
from orchestra.bridge.testing._pending import PENDING_FIELDS as PENDING_FIELDS
from orchestra.bridge.testing._pending import check_pending_request as check_pending_request
from orchestra.bridge.testing._task_matrix import TASK_CELLS as TASK_CELLS
from orchestra.bridge.testing._task_matrix import EndRecorder as EndRecorder
from orchestra.bridge.testing._task_matrix import TaskEngine as TaskEngine
from orchestra.bridge.testing._task_matrix import TaskRun as TaskRun
from orchestra.bridge.testing._task_matrix import check_task_cell as check_task_cell
from orchestra.bridge.testing._tool_matrix import TOOL_CELLS as TOOL_CELLS
from orchestra.bridge.testing._tool_matrix import ToolBody as ToolBody
from orchestra.bridge.testing._tool_matrix import ToolEngine as ToolEngine
from orchestra.bridge.testing._tool_matrix import ToolRun as ToolRun
from orchestra.bridge.testing._tool_matrix import check_tool_cell as check_tool_cell
from orchestra.bridge.testing._tool_matrix import tool_matrix_header as tool_matrix_header
from orchestra.bridge.testing._tool_matrix import tool_matrix_row as tool_matrix_row

__all__ = [
    "PENDING_FIELDS",
    "TASK_CELLS",
    "TOOL_CELLS",
    "EndRecorder",
    "TaskEngine",
    "TaskRun",
    "ToolBody",
    "ToolEngine",
    "ToolRun",
    "check_budget_trace",
    "check_pending_request",
    "check_task_cell",
    "check_tool_cell",
    "tool_matrix_header",
    "tool_matrix_row",
]

_export(globals())
