"""A PreToolUse hook script: `git push` only ever runs as a dry run.

It reads the event JSON on stdin and answers in Claude Code's hook output shape, so the
same script works as a Claude Code hook. No output means no opinion.
"""

import json
import sys

event = json.load(sys.stdin)
command = event["tool_input"].get("command", "")
if command.startswith("git push") and "--dry-run" not in command:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "pushes are dry runs in this project",
            "updatedInput": {**event["tool_input"], "command": command + " --dry-run"},
        }
    }
    print(json.dumps(answer))
