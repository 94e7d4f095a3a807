"""The conversation core. Never imports textual (a test checks it)."""
