"""Slash commands and `!` lines in the prompt: the built-in table (builtins.py), what a
submitted line does (dispatch.py), the completion list (menu.py), shell lines (shell.py)."""
