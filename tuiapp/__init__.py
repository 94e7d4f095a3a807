"""kep: a full-screen terminal chat for LLMs with function calling."""

__version__ = "0.1.0"
