"""``streameval dashboard --serve HOST:PORT``: the same dashboard in a web browser
(textual-serve), opened in headless Chromium (``tests/tui/browser.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from streameval.cli.dashboard import parse_serve, served_command
from streameval.cli.main import main
from streameval.errors import BadInputError
from tests.tui.browser import free_port, needs_browser, needs_textual_serve, served_page
from tests.tui.case_sample import ACC, RUN, write_case_run
from tests.tui.tui_fakes import async_test

# one worker: a server and a browser at a time on the two cores
pytestmark = pytest.mark.xdist_group("dashboard-browser")


def test_serve_takes_host_and_port(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert parse_serve("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_serve("[::1]:9000") == ("::1", 9000)
    for bad in ("8080", "host:", ":80", "h:0", "h:70000", "h:x"):
        with pytest.raises(BadInputError, match="HOST:PORT"):
            parse_serve(bad)
    assert main(["dashboard", str(tmp_path), "--serve", "nowhere"]) == 2
    assert "--serve" in capsys.readouterr().err
    # each page runs the command again without --serve, the folders made absolute
    args = argparse.Namespace(mqtt=None, results=[Path("out")])
    assert served_command(args).endswith(f"dashboard {Path('out').resolve()}")
    watch = argparse.Namespace(mqtt="mqtt://h:1883/s", results=[])
    assert served_command(watch).endswith("dashboard --mqtt mqtt://h:1883/s")


@needs_textual_serve
def test_serving_a_missing_folder_is_bad_input_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", str(tmp_path / "nope"), "--serve", "127.0.0.1:1"]) == 2
    assert "nope" in capsys.readouterr().err
    # no broker there: one line, exit 2, nothing served
    port = free_port()
    assert main(["dashboard", "--mqtt", f"mqtt://127.0.0.1:{port}", "--serve", "127.0.0.1:1"]) == 2
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


@needs_browser
@needs_textual_serve
@async_test
async def test_the_browser_shows_a_case_runs_panels(tmp_path: Path) -> None:
    write_case_run(tmp_path / "results", RUN)
    async with served_page([str(tmp_path / "results")], tmp_path / "profile") as page:
        text = await page.wait_for(
            ["cases 5/7 · 1 incomplete · 2 left", "Sets", "Columns over the whole case set"]
        )
        assert f"{ACC} 75.0 [" in text and "after 5 of 7" in text
        assert "first_view/real" in text and "third_view/style" in text
        # the page mounted the web terminal the App draws into
        assert await page.evaluate("document.querySelectorAll('.xterm').length") == 1
