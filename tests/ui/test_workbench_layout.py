"""Issue 29 item 4: the workbench form shows its input fields at 120×35 and 80×24, and below
100 columns the workbench folds into an overlay over the chat (the whole width)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import until

from tuiapp.project import config as project_config
from tuiapp.project.workspace import Workspace
from tuiapp.ui.app import make_app
from tuiapp.ui.widgets.schema_form import SchemaForm


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return project


@pytest.mark.parametrize("size", [(120, 35), (80, 24), (99, 30), (100, 30)])
async def test_the_form_fields_are_on_screen(proj: Path, size: tuple[int, int]) -> None:
    from tuiapp.tools.templates import create

    create(proj, "greet")
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=size) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("greet")
        await until(pilot, lambda: bool(app.query(SchemaForm)), what="the form")
        await pilot.pause()
        bench = app.bench()
        assert bench is not None
        field = bench.query_one(SchemaForm).query(Input).first()
        screen = app.screen.region
        visible = field.region.intersection(screen)
        assert visible.height >= 1 and visible.width >= 20, (field.region, screen)
        assert field.region in bench.region  # inside the workbench, not clipped away
        if size[0] < 100:  # folded: an overlay the whole width
            assert app.screen.has_class("-narrow")
            assert bench.region.width == size[0]
        elif size[0] >= 120:
            assert bench.region.width < size[0]  # beside the chat
        if bench.region.width < size[0]:  # beside: the chat keeps 60 columns (issue 29)
            assert size[0] - bench.region.width >= 60
        await pilot.press(*"hello")  # typing goes somewhere visible, nothing crashes
