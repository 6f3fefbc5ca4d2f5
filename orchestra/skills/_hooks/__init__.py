"""The hook types: ``HookSpec`` and one module per ``type:``, with what runs each."""
