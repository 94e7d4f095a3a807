"""The display type, enforced in code: no markup string is built from a variable anywhere in
tuiapp/. Textual reads a plain str as content markup in a widget's content, an option, a
palette entry, a notification, a border title: foreign text in it can run an action
(`[@click=app.quit]`). Foreign text reaches a widget only as Content built by ui.literal
(`literal`, `say`, `highlighted`), which never parses markup.

The scan walks every call and assignment in tuiapp/ (AST): where Textual would read a str as
markup, the value must be a constant (kep's own words), a call to one of the literal
builders, or a name bound to one (a local `text = say(...)`). Anything else - an f-string,
`%`, `.format`, concatenation, `str(e)`, a parameter - fails with its file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "tuiapp"

# Calls whose arguments Textual may read as markup: name → (positional indexes, keywords).
SINKS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "Static": ((0,), ("content", "renderable")),
    "Label": ((0,), ("content", "renderable")),
    "Button": ((0,), ("label", "tooltip")),
    "Checkbox": ((0,), ("label",)),
    "RadioButton": ((0,), ("label",)),
    "Switch": ((), ("tooltip",)),
    "Tab": ((0,), ("label",)),
    "TabPane": ((0,), ("title",)),
    "Collapsible": ((), ("title",)),
    "Option": ((0,), ("prompt",)),
    "Toast": ((0,), ()),
    "Notification": ((0, 1), ("message", "title")),
    "notify": ((0,), ("message", "title")),
    "update": ((0,), ("content",)),
    "Hit": ((1,), ("match_display", "help")),
    "DiscoveryHit": ((0,), ("display", "help")),
    "SystemCommand": ((0, 1), ("title", "help")),
    "from_markup": ((0,), ("markup",)),
    "render_markup": ((0,), ()),
    "with_tooltip": ((0,), ()),
}
# Calls whose arguments are lists of options: (prompt, value) tuples or prompts.
OPTION_LISTS: dict[str, tuple[int, ...]] = {
    "Select": (0,), "set_options": (0,), "add_options": (0,), "add_option": (0,),
    "OptionList": (), "SelectionList": (),
}
# Attributes Textual renders as markup when a str is assigned.
ATTRIBUTES = {"border_title", "border_subtitle", "tooltip", "label", "sub_title"}
# What builds literal content (never markup): ui.literal's builders, Content itself and the
# display edge's functions (whose result is a plain str with nothing to act on - but a str
# to a markup sink still fails unless markup is off: see _markup_off).
BUILDERS = {"literal", "say", "highlighted", "Content", "assemble", "styled", "Text",
            "highlight", "Option", "Separator"}
EDGE = {"foreign", "printable", "printable_line"}


@dataclass(frozen=True)
class Offence:
    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


# Where foreign text nearly always is, every value must be literal content or a constant:
# options, palette entries, notifications.
STRICT = {"notify", "Notification", "Hit", "DiscoveryHit", "SystemCommand", "Toast",
          "Button", "Checkbox", "RadioButton", "Tab", "TabPane", "Collapsible", "Option"}


class _Scan(ast.NodeVisitor):
    def __init__(self, file: str) -> None:
        self.file = file
        self.found: list[Offence] = []
        self.safe_names: list[set[str]] = [set()]
        self.built_names: list[set[str]] = [set()]
        self.values: list[dict[str, list[ast.expr]]] = [{}]
        self.content_functions: set[str] = set()

    # Names a function binds: only to literal content or constants (safe), or ever to a
    # str built from variables (built).
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        safe: dict[str, bool] = {}
        built: set[str] = set()
        values: dict[str, list[ast.expr]] = {}
        for sub in ast.walk(node):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(sub, ast.Assign):
                targets, value = sub.targets, sub.value
            elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)) and sub.value is not None:
                targets, value = [sub.target], sub.value
            for t in targets:
                if isinstance(t, ast.Name) and value is not None:
                    values.setdefault(t.id, []).append(value)
                    safe[t.id] = safe.get(t.id, True) and self._safe(value, names=False)
                    if self._built(value, names=False) or isinstance(sub, ast.AugAssign):
                        built.add(t.id)
        self.safe_names.append({n for n, ok in safe.items() if ok})
        self.built_names.append(built)
        self.values.append(values)
        self.generic_visit(node)
        self.safe_names.pop()
        self.built_names.pop()
        self.values.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _safe(self, node: ast.expr, *, names: bool = True) -> bool:
        """Literal content or a constant, for sure."""
        if isinstance(node, ast.Constant):
            return True  # kep's own words (or None, a number)
        if isinstance(node, ast.JoinedStr):
            return all(isinstance(v, ast.Constant) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self._safe(node.body, names=names) and self._safe(node.orelse, names=names)
        if isinstance(node, ast.Call):
            return _name(node.func) in BUILDERS or _name(node.func) in self.content_functions
        if isinstance(node, ast.Name) and names:
            return node.id in self.safe_names[-1]
        if isinstance(node, ast.Tuple):  # (text, style) inside Content.assemble
            return all(self._safe(e, names=names) for e in node.elts)
        return False

    def _built(self, node: ast.expr, *, names: bool = True) -> bool:
        """A str built from variables (f-string, %, +, .format, str(), join), or one the
        display edge returns (a str: read as markup where markup is on)."""
        if isinstance(node, ast.JoinedStr):
            return not self._safe(node)
        if isinstance(node, ast.BinOp):
            return True
        if isinstance(node, ast.IfExp):
            return self._built(node.body, names=names) or self._built(node.orelse, names=names)
        if isinstance(node, ast.Call):
            return _name(node.func) in {"format", "str", "join", "repr", *EDGE}
        return isinstance(node, ast.Name) and names and node.id in self.built_names[-1]

    def _check(self, node: ast.expr, where: str, *, markup_off: bool, strict: bool) -> None:
        if self._safe(node):
            return
        if markup_off and not strict:
            return  # a str shown as it is (its control characters: test_display_edge)
        if strict or self._built(node):
            self.found.append(Offence(self.file, node.lineno,
                                      f"{where}: {ast.unparse(node)[:80]}"))

    def visit_Call(self, node: ast.Call) -> None:
        name = _name(node.func)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        markup = kw.get("markup")
        markup_off = isinstance(markup, ast.Constant) and markup.value is False
        if _is_super(node.func):
            self.generic_visit(node)  # an override handing on what it converted
            return
        if name in SINKS and not (name == "update" and not node.args):
            positions, keywords = SINKS[name]
            strict = (name in STRICT and not (markup_off and name == "notify")) \
                or name in ("from_markup", "render_markup")
            for i in positions:
                if i < len(node.args):
                    self._check(node.args[i], f"{name}() argument {i}",
                                markup_off=markup_off, strict=strict)
            for k in keywords:
                if k in kw:
                    self._check(kw[k], f"{name}({k}=)", markup_off=markup_off and k != "tooltip",
                                strict=strict or (name == "notify" and k == "title"))
        if name in OPTION_LISTS:
            args = [node.args[i] for i in OPTION_LISTS[name] if i < len(node.args)]
            args += [kw[k] for k in ("options",) if k in kw]
            if name in ("OptionList", "SelectionList"):
                args += list(node.args)
            for arg in [r for a in args for r in self._resolve(a)]:
                for prompt in _prompts(arg):
                    self._check(prompt, f"{name}() option", markup_off=False, strict=True)
        if markup is not None and not markup_off:
            for arg in node.args[:1]:
                self._check(arg, f"{name}(markup=…)", markup_off=False, strict=True)
        self.generic_visit(node)

    def _resolve(self, node: ast.expr) -> list[ast.expr]:
        """A name's assigned values in this function (an options list built beforehand)."""
        if isinstance(node, ast.Name) and node.id in self.values[-1]:
            return self.values[-1][node.id]
        return [node]

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            if isinstance(t, ast.Attribute) and t.attr in ATTRIBUTES:
                self._check(node.value, f".{t.attr} =", markup_off=False, strict=False)
        self.generic_visit(node)


def _is_super(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
        and _name(func.value.func) == "super"


def _prompts(arg: ast.expr) -> list[ast.expr]:
    """The prompts in an options argument: each tuple's first element, or each element."""
    elements: list[ast.expr] = []
    if isinstance(arg, (ast.List, ast.Tuple, ast.Set)):
        elements = list(arg.elts)
    elif isinstance(arg, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        elements = [arg.elt]
    else:
        return []
    out = []
    for e in elements:
        out.append(e.elts[0] if isinstance(e, ast.Tuple) and e.elts else e)
    return out


def scan(source: str, file: str = "<test>") -> list[Offence]:
    tree = ast.parse(source)
    s = _Scan(file)
    # The module's own functions declared to return Content (`-> Content`) build content.
    s.content_functions = {
        f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        and f.returns is not None and ast.unparse(f.returns).strip("'\"") == "Content"}
    s.visit(tree)
    return s.found


def test_no_markup_string_is_built_from_a_variable_in_tuiapp() -> None:
    found: list[Offence] = []
    for path in sorted(ROOT.rglob("*.py")):
        found += scan(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert not found, "markup built from a variable (use ui.literal's say/literal):\n" + \
        "\n".join(map(str, found))


# ---- the scan itself catches what it must (it can fail) ------------------------------------

@pytest.mark.parametrize("code", [
    'app.notify(f"MCP server {name} failed")',
    'self.notify(str(e), title="MCP")',
    'self.notify("x", title=f"Cannot start {name}")',
    'yield SystemCommand(f"MCP: restart {name}", f"now {s}", cb)',
    'Select([(v, i) for i, v in enumerate(enum)])',
    'Select([(json.dumps(v), i) for i, v in enumerate(enum)])',
    'opts.set_options([Option(f"#{i} {r}") for r in runs])',
    'w.update("Run " + name)',
    'w.update("Run %s" % name)',
    'w.update("Run {}".format(name))',
    'Static(f"Editing {path}")',
    'Label(text, markup=True)',
    'Content.from_markup(f"[b]{name}[/b]")',
    'Text.from_markup(name)',
    'box.border_title = f"Tool {name}"',
    'yield Hit(1.0, name, cb, help=note)',
    'w.update(printable(f"x {y}"))',
    'Label(foreign(name))',
    'Checkbox(name, True)',
    'def f(e):\n    options = [(json.dumps(v), j) for j, v in enumerate(e)]\n    Select(options)',
    'Select([(v if isinstance(v, str) else json.dumps(v), j) for j, v in enumerate(e)])',
    'def f(x):\n    text = f"{x}"\n    w.update(text)',
])
def test_the_scan_catches_markup_built_from_a_variable(code: str) -> None:
    assert scan(code), code


@pytest.mark.parametrize("code", [
    'app.notify("Nothing to retry.")',
    'app.notify(say("MCP server {} failed: {}", name, reason), title="MCP")',
    'Select([(literal(v, line=True), i) for i, v in enumerate(enum)])',
    'Static(f"Editing {path}", markup=False)',
    'Static(printable(x), markup=False)',
    'w.update(Content.assemble("Run ", (printable_line(n), "bold")))',
    'def f(x):\n    text = say("{}", x)\n    w.update(text)',
    'd.update(other)',
    'w.update(self._status_content())',
    'self.notify(printable(text), markup=False)',
    'Content.from_markup("[b]kep[/b]")',
])
def test_the_scan_lets_literal_content_through(code: str) -> None:
    assert not scan(code), scan(code)
