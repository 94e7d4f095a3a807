"""The vocabulary every layer shares: plain dataclasses for messages, events and tool specs."""
