"""Test doubles of ours (no network): see llm_server.py for the scripted fake LLM server."""
