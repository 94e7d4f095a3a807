"""The text of each `kep new` template, keyed by (format, language).

__NAME__ is the tool's name, __CLASS__ its CamelCase class name (AITool). Every template does
the same small job (echo a message, optionally upper-cased) so it runs as generated.
"""

from __future__ import annotations

KEPROMPT_PYTHON = '''#!/usr/bin/env python3
"""__NAME__: a kep external function (keprompt protocol).

Try it:  ./prompts/functions/__NAME__ --list-functions
         echo '{"message": "hi"}' | ./prompts/functions/__NAME__ __NAME__
Paths are relative to the project root (kep runs tools there); files that belong to this
tool are found next to it: Path(__file__).parent / "data.json".
"""

import json
import sys

VERSION = "0.1.0"


def run(message: str, shout: bool = False) -> str:
    """Replace this with what your tool does."""
    return message.upper() if shout else message


DEFINITIONS = [
    {
        "name": "__NAME__",
        "description": "Echo a message back, upper-cased on request. Replace this text with "
        "what the tool does and when the model should call it.",
        "parameters": {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The text to echo, e.g. hello"},
                "shout": {"type": "boolean", "description": "Upper-case the reply",
                          "default": False},
            },
            "required": ["message"],
            "additionalProperties": False,
        },
    }
]
FUNCTIONS = {"__NAME__": run}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: __NAME__ --list-functions | --version | FUNCTION < args.json",
              file=sys.stderr)
        return 1
    if argv[1] == "--list-functions":
        print(json.dumps(DEFINITIONS))
        return 0
    if argv[1] == "--version":
        print(VERSION)
        return 0
    function = FUNCTIONS.get(argv[1])
    if function is None:
        print(f"unknown function {argv[1]!r}", file=sys.stderr)
        return 1
    try:
        text = sys.stdin.read().strip()
        arguments = json.loads(text) if text else {}
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
        print(function(**arguments))
    except (ValueError, TypeError) as e:  # bad JSON, missing or unknown arguments
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

KEPROMPT_BASH = r'''#!/usr/bin/env bash
# __NAME__: a kep external function (keprompt protocol). Needs jq.
# Try it:  ./prompts/functions/__NAME__ --list-functions
#          echo '{"message": "hi"}' | ./prompts/functions/__NAME__ __NAME__
# Paths are relative to the project root; files next to this script: "$(dirname "$0")/x".
set -euo pipefail

case "${1:-}" in
  --list-functions)
    cat <<'JSON'
[
  {
    "name": "__NAME__",
    "description": "Echo a message back, upper-cased on request (say what yours does).",
    "parameters": {
      "type": "object",
      "properties": {
        "message": {"type": "string", "description": "The text to echo, e.g. hello"},
        "shout": {"type": "boolean", "description": "Upper-case the reply", "default": false}
      },
      "required": ["message"],
      "additionalProperties": false
    }
  }
]
JSON
    ;;
  --version)
    echo "0.1.0"
    ;;
  __NAME__)
    input=$(cat)
    if ! message=$(jq -er '.message | strings' <<<"$input" 2>/dev/null); then
      echo "error: expected a JSON object with a \"message\" string" >&2
      exit 1
    fi
    if [ "$(jq -r '.shout // false' <<<"$input")" = "true" ]; then
      message=${message^^}
    fi
    printf '%s\n' "$message"
    ;;
  *)
    echo "unknown function '${1:-}'" >&2
    exit 1
    ;;
esac
'''

LLM_BASH = r'''#!/usr/bin/env bash
set -e

# @describe Echo a message back, upper-cased on request (say what yours does).
# @option --message! The text to echo, e.g. hello
# @flag --shout Upper-case the reply

main() {
    local text="$argc_message"
    if [[ -n "${argc_shout:-}" && "${argc_shout:-}" != 0 ]]; then
        text="${text^^}"
    fi
    printf '%s\n' "$text" >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
'''

PY_RUN = '''def run(message: str, shout: bool = False) -> str:
    """Echo a message back, upper-cased on request. Replace this text with what the tool does.

    Args:
        message: The text to echo, e.g. hello
        shout: Upper-case the reply
    """
    return message.upper() if shout else message
'''

LLM_PYTHON = '''"""__NAME__: an llm-functions tool (its function `run` is the tool __NAME__)."""

''' + PY_RUN

LOKI_PYTHON = '''"""__NAME__: a Loki tool (the function `run` becomes the tool __NAME__)."""

''' + PY_RUN

EXTENSION_PYTHON = '''"""__NAME__: an extension pack; every function in TOOLS is a tool."""

NAME = "__NAME__"
SYSTEM_PROMPT = "Tools of the __NAME__ pack. Replace this with what the pack is for."


def __NAME__(message: str, shout: bool = False) -> str:
    """Echo a message back, upper-cased on request (replace with what the tool does).
    Example Prompt: say hello with __NAME__
    """
    return message.upper() if shout else message


TOOLS = [__NAME__]
'''

AITOOL_PYTHON = '''"""__NAME__: an AITool class (name, description, parameters_schema, execute)."""

from typing import Any


class __CLASS__:
    name = "__NAME__"
    description = ("Echo a message back, upper-cased on request. Replace this text with what "
                   "the tool does.")
    parameters_schema = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The text to echo, e.g. hello"},
            "shout": {"type": "boolean", "description": "Upper-case the reply",
                      "default": False},
        },
        "required": ["message"],
        "additionalProperties": False,
    }

    def get_ai_prompt_instructions(self) -> str:
        return "Use __NAME__ to echo a message."

    def execute(self, message: str, shout: bool = False) -> Any:
        return message.upper() if shout else message
'''

TEXTS: dict[tuple[str, str], str] = {
    ("keprompt", "python"): KEPROMPT_PYTHON,
    ("keprompt", "bash"): KEPROMPT_BASH,
    ("llm-functions", "bash"): LLM_BASH,
    ("llm-functions", "python"): LLM_PYTHON,
    ("loki", "python"): LOKI_PYTHON,
    ("extension", "python"): EXTENSION_PYTHON,
    ("aitool", "python"): AITOOL_PYTHON,
}
