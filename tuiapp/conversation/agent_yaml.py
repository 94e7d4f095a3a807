"""One agent file's YAML (llm-functions `index.yaml`, Loki `config.yaml`), read and checked the
same way for both: one clear AgentError naming the file and the key, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuiapp.conversation.agent_model import AgentError, AgentVariable


class AgentYaml:
    def __init__(self, path: Path) -> None:
        import yaml

        self.path = path
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as e:
            raise AgentError(f"{path}: cannot read: {e.strerror}") from None
        except UnicodeDecodeError:
            raise AgentError(f"{path}: not UTF-8 text") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f":{mark.line + 1}" if mark is not None else ""
            raise AgentError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
        if not isinstance(data, dict):
            raise AgentError(f"{path}: expected a mapping (name, instructions, …)")
        self.data: dict[str, Any] = data

    def text(self, key: str) -> str:
        v = self.data.get(key)
        if v is None:
            return ""
        if not isinstance(v, str | int | float):
            raise AgentError(f"{self.path}: {key}: expected text")
        return str(v)

    def strings(self, key: str) -> list[str]:
        v = self.data.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str | int | float) for x in v):
            raise AgentError(f"{self.path}: {key}: expected a list of strings")
        return [str(x) for x in v]

    def variables(self) -> list[AgentVariable]:
        out = []
        for i, raw in enumerate(self.data.get("variables") or [], 1):
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
                raise AgentError(
                    f"{self.path}: variables[{i}]: expected {{name, description, default}}")
            default = raw.get("default")
            out.append(AgentVariable(raw["name"], str(raw.get("description") or ""),
                                     None if default is None else str(default)))
        return out

    def common_fields(self, agent_dir: Path) -> dict[str, Any]:
        """The Agent fields both formats spell the same way."""
        return {
            "name": agent_dir.name,
            "dir": agent_dir,
            "llm_root": agent_dir.parent.parent,
            "title": self.text("name") or agent_dir.name,
            "description": self.text("description"),
            "version": self.text("version"),
            "instructions": self.text("instructions"),
            "dynamic_instructions": bool(self.data.get("dynamic_instructions")),
            "variables": self.variables(),
            "starters": self.strings("conversation_starters"),
            "documents": self.strings("documents"),
        }
