"""The one-policy conformance matrix: the same cells run over every engine's adapter.

The task half (``TASK_CELLS``, ``TaskEngine``, ``check_task_cell``): retries, skips by
the engine's own tags, fail, replace, a given output, ``on_end`` once, a raising and a
hanging hook per policy, one trace. Each integration's tests implement ``TaskEngine``
and check every cell; a cell an engine cannot do is listed, with the reason, in its
``cannot``. See the how-to "Adding an engine".
"""

from orchestra._exports import export as _export
from orchestra.bridge.testing._task_matrix import TASK_CELLS as TASK_CELLS
from orchestra.bridge.testing._task_matrix import TaskEngine as TaskEngine
from orchestra.bridge.testing._task_matrix import TaskRun as TaskRun
from orchestra.bridge.testing._task_matrix import check_task_cell as check_task_cell

__all__ = ["TASK_CELLS", "TaskEngine", "TaskRun", "check_task_cell"]

_export(globals())
