"""The one-policy conformance matrix: the same cells run over every engine's adapter.

The tool half (``TOOL_CELLS``, ``ToolEngine``, ``check_tool_cell``): deny, rewrite, mock,
a ``PostToolUse`` rewrite, audit (``enforce: false``), ask where the engine can pause, a
raising and a hanging hook per policy (a guard fails closed, a plain hook fails open),
one trace; ``tool_matrix_row`` renders an engine's row of docs/howto/one-policy.md.

The task half (``TASK_CELLS``, ``TaskEngine``, ``check_task_cell``): retries, skips by
the engine's own tags, fail, replace, a given output, ``on_end`` once, a raising and a
hanging hook per policy, one trace. Each integration's tests implement ``TaskEngine``
and check every cell; a cell an engine cannot do is listed, with the reason, in its
``cannot`` (``task_matrix_row`` renders the engine's row of docs/howto/one-policy.md).
``EndRecorder`` keeps ``on_end``'s states, for an engine that raises nothing for work
its hooks gave up. See the how-to "Adding an engine".

``check_pending_request`` checks a paused call's pending request (``PENDING_FIELDS``):
every engine's approval tests hold their engine's request to the one shape with it.
``check_budget_trace`` checks that a run's span carries its budget use as ``orchestra
trace show`` and ``orchestra trace report`` read it.

The ways around the guard (``WAY_CELLS``, ``WayEngine``, ``check_way_cell``): each other
path an engine's tools can be called by, judged on its real input. The ask round trip
(``ASK_CELLS``, ``AskEngine``, ``check_ask_cell``): approve once, deny, an edit judged
again, an answer naming another call's digest, in every engine that can pause.
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
from orchestra.bridge.testing._task_matrix import task_matrix_header as task_matrix_header
from orchestra.bridge.testing._task_matrix import task_matrix_row as task_matrix_row
from orchestra.bridge.testing._tool_matrix import TOOL_CELLS as TOOL_CELLS
from orchestra.bridge.testing._tool_matrix import ToolBody as ToolBody
from orchestra.bridge.testing._tool_matrix import ToolEngine as ToolEngine
from orchestra.bridge.testing._tool_matrix import ToolRun as ToolRun
from orchestra.bridge.testing._tool_matrix import check_tool_cell as check_tool_cell
from orchestra.bridge.testing._tool_matrix import tool_matrix_header as tool_matrix_header
from orchestra.bridge.testing._tool_matrix import tool_matrix_row as tool_matrix_row
from orchestra.bridge.testing._ways import ASK_CELLS as ASK_CELLS
from orchestra.bridge.testing._ways import WAY_CELLS as WAY_CELLS
from orchestra.bridge.testing._ways import AskEngine as AskEngine
from orchestra.bridge.testing._ways import Paused as Paused
from orchestra.bridge.testing._ways import WayEngine as WayEngine
from orchestra.bridge.testing._ways import ask_matrix_header as ask_matrix_header
from orchestra.bridge.testing._ways import ask_matrix_row as ask_matrix_row
from orchestra.bridge.testing._ways import check_ask_cell as check_ask_cell
from orchestra.bridge.testing._ways import check_way_cell as check_way_cell
from orchestra.bridge.testing._ways import way_matrix_header as way_matrix_header
from orchestra.bridge.testing._ways import way_matrix_rows as way_matrix_rows

__all__ = [
    "ASK_CELLS",
    "PENDING_FIELDS",
    "TASK_CELLS",
    "TOOL_CELLS",
    "WAY_CELLS",
    "AskEngine",
    "EndRecorder",
    "Paused",
    "TaskEngine",
    "TaskRun",
    "ToolBody",
    "ToolEngine",
    "ToolRun",
    "WayEngine",
    "ask_matrix_header",
    "ask_matrix_row",
    "check_ask_cell",
    "check_budget_trace",
    "check_pending_request",
    "check_task_cell",
    "check_tool_cell",
    "check_way_cell",
    "task_matrix_header",
    "task_matrix_row",
    "tool_matrix_header",
    "tool_matrix_row",
    "way_matrix_header",
    "way_matrix_rows",
]

_export(globals())
