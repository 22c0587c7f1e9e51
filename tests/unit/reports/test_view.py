"""`agentsweep view` (reports.view): the read-only web viewer over the warehouse, served by
uvicorn on 127.0.0.1 and read in a real headless Chromium (tests/helpers/browser.py; the
browser reaches the server only through the test's process, tests/helpers/viewer.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE
from helpers.browser import Browser, chromium_path
from helpers.html_fixtures import CANARY, MARKUP, base_and_candidate
from helpers.trend_fixtures import PROMPT_AFTER, PROMPT_BEFORE, night_id, series
from helpers.viewer import Viewer, viewer
from starlette.testclient import TestClient

from pipeline.catalog import load_suites
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.sweep.stages import BatchSink
from pipeline.trial.run import RunContext, TrialResult, run_trial
from pipeline.util.redact import redactor
from reports.view import ViewOptions, create_app
from warehouse.query import run_sql
from warehouse.rows import RunRow
from warehouse.writer import WarehouseWriter

MODELS = ("reference/golden", "reference/mutant-stale-value")


def _results(run_id: str, repeats: int = 1) -> list[TrialResult]:
    """Real trials of the meeting-rooms suite: the golden reference model and a mutant that
    keeps a stale value (it fails some scenarios), offline."""
    specs = expand(load_suites([MEETING_SUITE]), [ModelConfig(m) for m in MODELS],
                   ["default"], ["chat"], repeats)
    return [run_trial(s, RunContext(run_id, "agentsweep 0.test")) for s in specs]


def _run_row(run_id: str, grid: int, finished: bool) -> dict[str, Any]:
    now = datetime.now(UTC)
    return RunRow(run_id=run_id, invocation_id="inv-1", started_at=now,
                  finished_at=now if finished else None, code_version="agentsweep 0.test",
                  suite_ids=["intent_change"], suite_sha256s=["s"], models=list(MODELS),
                  memory_modes=["chat"], repeats=1, grid_size=grid,
                  trials_run=grid if finished else 0, ray_address=None,
                  argv="agentsweep run", config_json=None).as_dict()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base and cand (hostile markup and a canary key in S3's replies), a 30-night series
    whose BREAKS cell breaks on night 20 with a new prompt, and a real sweep of two models."""
    home = tmp_path_factory.mktemp("view") / "home"
    root = home / "warehouse"
    base_and_candidate(root)
    series(root, "prompt")
    results = _results("sweep")
    writer = WarehouseWriter(root, "sweep")
    writer.write_batch({"runs": [_run_row("sweep", len(results), finished=True)]})
    sink = BatchSink(writer, batch_size=100)
    for result in results:
        sink(result)
    sink.flush()
    return home


@pytest.fixture
def options(home: Path, monkeypatch: pytest.MonkeyPatch) -> ViewOptions:
    monkeypatch.setenv("AGENTSWEEP_CANARY_API_KEY", CANARY)
    return ViewOptions(home / "warehouse", redactor(), lambda run_id: False, poll_ms=200)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium_path() is None:
        pytest.fail("chromium is not installed: `make setup-dev` installs it (apt-get install "
                    "chromium)")
    pages = _Pages()
    with Browser(serve=pages.serve) as b:
        b.pages = pages  # type: ignore[attr-defined]
        yield b


class _Pages:
    """The one browser of the module answers from whichever viewer a test started. A late
    request of an earlier test's page (a poll already on its way when that page went) asks for
    a viewer that is gone: it fails, and is not counted against the current one."""

    def __init__(self) -> None:
        self.current: Viewer | None = None
        self.gone: set[str] = set()

    def serve(self, url: str) -> Any:
        if self.current is None:
            return None
        if not url.startswith(self.current.origin) and any(url.startswith(o) for o in self.gone):
            return None
        return self.current.serve(url)


@contextmanager
def _shown(browser: Browser, options: ViewOptions) -> Iterator[Viewer]:
    """A viewer over ``options`` that the module's browser reaches; when the block ends,
    nothing its pages asked for went anywhere but that viewer on loopback, and no script
    failed."""
    pages: _Pages = browser.pages  # type: ignore[attr-defined]
    browser.call("Page.navigate", {"url": "about:blank"})  # the last test's page is gone
    with viewer(options) as served:
        pages.current = served
        browser.requests.clear()
        browser.errors.clear()
        try:
            yield served
        finally:
            pages.current = None
            pages.gone.add(served.origin)
        assert served.refused == []
        requests = [u for u in browser.requests if u != "about:blank"]
        assert all(u.startswith(served.origin) for u in requests), requests
        assert browser.errors == []


@pytest.fixture
def site(options: ViewOptions, browser: Browser) -> Iterator[Viewer]:
    with _shown(browser, options) as served:
        yield served


def _texts(browser: Browser, selector: str) -> list[str]:
    return list(browser.evaluate(f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
                                 ".map(function(e){return e.textContent;})"))


# the app without a browser --------------------------------------------------------------------

def test_every_answer_carries_the_policy_and_other_hosts_are_refused(
        options: ViewOptions) -> None:
    client = TestClient(create_app(options), base_url="http://127.0.0.1:8321")
    for path in ("/", "/trends", "/search", "/side", "/api/runs", "/static/view.js",
                 "/api/nothing", "/runs/base"):
        answer = client.get(path)
        assert "default-src 'none'" in answer.headers["content-security-policy"], path
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'sha256-" in client.get("/runs/base").headers[
        "content-security-policy"]  # the report's own policy: its one script by hash
    assert client.post("/api/runs").status_code == 405  # read-only: GET alone
    assert client.get("/runs/nope").status_code == 404
    assert client.get("/api/search?outcome=bogus").status_code == 400
    foreign = TestClient(create_app(options), base_url="http://attacker.example")
    assert foreign.get("/api/runs").status_code == 400  # a rebound name reaches nothing


def test_the_canary_key_is_in_no_answer(options: ViewOptions) -> None:
    client = TestClient(create_app(options), base_url="http://127.0.0.1")
    answers = [client.get(p).text for p in (
        "/api/runs", "/api/search?text=booked", "/api/facets", "/runs/base",
        "/api/trace?run_id=base&trial_id=S3-m/a-chat-0", "/api/trends?since=9999d")]
    assert "Booked." in answers[4] and "[REDACTED]" in answers[4]  # the canary was there
    for text in answers:
        assert CANARY not in text and CANARY[:16] not in text


@pytest.mark.slow  # a fresh process under strace
def test_agentsweep_view_listens_on_loopback_and_connects_nowhere(home: Path,
                                                                  tmp_path: Path) -> None:
    """The command prints its address (127.0.0.1), answers there, and neither it nor anything
    it starts connects to any address (every connect() traced)."""
    import shutil

    if shutil.which("strace") is None:
        pytest.fail("strace is not installed (.ci/run installs it)")
    log = tmp_path / "connect.log"
    process = subprocess.Popen(
        ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect,bind", "-o", str(log),
         sys.executable, "-c", "from pipeline.cli.app import main; main()", "view", "--port",
         "0"], env={**os.environ, "AGENTSWEEP_HOME": str(home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("agentsweep view: http://127.0.0.1:"), line
        origin = line.split()[2]
        import urllib.request
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 30
        while True:
            try:
                with opener.open(origin + "api/runs", timeout=10) as answer:
                    runs = json.loads(answer.read())
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert {r["run_id"] for r in runs} >= {"base", "cand", "sweep", night_id(30)}
        with opener.open(origin + "search?text=booked", timeout=10) as answer:
            assert answer.status == 200
    finally:  # the viewer (strace's child) stops on SIGTERM, then strace ends
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        for pid in children.read_text().split() if children.exists() else ():
            os.kill(int(pid), signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    lines = log.read_text().splitlines()
    binds = [x for x in lines if "bind(" in x and "AF_INET" in x]
    assert binds and all('"127.0.0.1"' in x for x in binds)  # it listened on loopback only
    connects = [x for x in lines if "connect(" in x and ("AF_INET" in x)]
    assert connects == []  # a read-only viewer over local files reaches out to nothing


# in the browser ---------------------------------------------------------------------------

@pytest.mark.slow  # a real headless Chromium
def test_the_index_lists_every_run_with_the_warehouses_counts(
        site: Viewer, browser: Browser, options: ViewOptions) -> None:
    browser.open_url(site.origin)
    browser.wait_for("document.querySelectorAll('table.runs tbody tr').length > 0")
    by_hand = run_sql(options.root, """
        SELECT run_id, count(*) FILTER (WHERE passed),
               count(*) FILTER (WHERE status = 'complete' AND NOT passed),
               count(*) FILTER (WHERE status IN ('agent_error', 'limit')),
               count(*) FILTER (WHERE status = 'incomplete')
        FROM trials GROUP BY run_id ORDER BY run_id""", all_runs=True).rows
    shown = browser.evaluate(
        "Array.from(document.querySelectorAll('table.runs tbody tr')).map(function(tr){"
        "function c(n){return tr.querySelector('td.'+n).textContent;}"
        "return [tr.dataset.run, c('passed'), c('failed'), c('agent_errors'), c('incomplete'),"
        " c('kind'), c('state'), c('cost')];})")
    assert sorted(tuple(map(str, r)) for r in by_hand) == sorted(tuple(r[:5]) for r in shown)
    kinds = {r[0]: r[5] for r in shown}
    assert kinds[night_id(3)] == "nightly" and kinds["sweep"] == "adhoc"
    assert {r[6] for r in shown} == {"finished"}
    assert {r[0]: r[7] for r in shown}["sweep"] == "unknown"  # the reference models report none
    # a filter narrows the list without a reload
    browser.evaluate("var f = document.getElementById('filters'); f.elements.kind.value = "
                     "'nightly'; f.dispatchEvent(new Event('input')); 1")
    rows = _texts(browser, "table.runs tbody tr td.kind")
    assert rows and set(rows) == {"nightly"} and len(rows) == 30
    browser.screenshot(options.root.parent / "index.png")


@pytest.mark.slow  # a real headless Chromium
def test_a_running_sweeps_progress_advances_on_the_page(
        tmp_path: Path, browser: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep writes as BatchSink does (batches of committed trials, the runs row open until
    the end); the page shows each batch without a reload, then the finished run."""
    root = tmp_path / "warehouse"
    results = _results("live-run", repeats=2)  # 44 trials
    writer = WarehouseWriter(root, "live-run")
    writer.write_batch({"runs": [_run_row("live-run", len(results), finished=False)]})
    sink = BatchSink(writer, batch_size=10)
    options = ViewOptions(root, redactor(), lambda run_id: run_id == "live-run", poll_ms=200)

    def progress() -> str:
        return str(browser.evaluate("(document.querySelector('tr[data-run=\"live-run\"] "
                                    "td.state') || {}).textContent || ''"))

    with _shown(browser, options) as served:
        browser.open_url(served.origin)
        browser.wait_for("document.querySelector('tr[data-run=\"live-run\"]') !== null")
        assert progress().startswith("running") and f"0/{len(results)} done" in progress()
        browser.evaluate("window.__same_page = 1")
        seen = []
        for batch in range(4):
            for result in results[batch * 10:(batch + 1) * 10]:
                sink(result)
            done = (batch + 1) * 10
            browser.wait_for(f"document.querySelector('tr[data-run=\"live-run\"] td.state')"
                             f".textContent.indexOf('{done}/{len(results)} done') >= 0")
            seen.append(progress())
        assert all("ETA" in s and "not passed" in s for s in seen)
        for result in results[40:]:
            sink(result)
        sink.flush()
        writer.write_batch({"runs": [_run_row("live-run", len(results), finished=True)]})
        browser.wait_for("document.querySelector('tr[data-run=\"live-run\"] td.state')"
                         ".textContent === 'finished'")
        assert browser.evaluate("window.__same_page") == 1  # never reloaded
        passed = browser.evaluate("document.querySelector('tr[data-run=\"live-run\"] "
                                  "td.passed').textContent")
        assert int(passed) == sum(1 for r in results if r.trial.passed)


@pytest.mark.slow  # a real headless Chromium
def test_the_trends_page_attributes_the_regression_to_the_prompt_hash(
        site: Viewer, browser: Browser, options: ViewOptions) -> None:
    browser.open_url(site.origin + "trends?since=99999d")
    browser.wait_for("document.body.dataset.loaded === '1'")
    row = browser.evaluate("document.querySelector('table.regressions tr[data-scenario=BREAKS]')"
                           ".textContent")
    assert night_id(19) in row and night_id(20) in row and "✗ 0/3" in row
    changed = browser.evaluate("document.querySelector('table.regressions "
                               "tr[data-scenario=BREAKS] td.what-changed').textContent")
    assert changed == f"prompt_sha256: {PROMPT_BEFORE} → {PROMPT_AFTER}"
    # the cand run broke S1 with nothing recorded changed
    s1 = browser.evaluate("document.querySelector('table.regressions tr[data-scenario=S1] "
                          "td.what-changed').textContent")
    assert s1.startswith("nothing recorded changed")
    flaky = browser.evaluate("document.querySelector('table.flaky tr[data-scenario=FLAKY]')"
                             ".textContent")
    assert "◐ 75/90" in flaky
    browser.click("table.regressions tr[data-scenario=BREAKS] button.cell-link")
    browser.wait_for("document.querySelectorAll('table.history tbody tr').length === 30")
    history = _texts(browser, "table.history tbody tr")
    assert history[18].startswith(night_id(19)) and "✓ 3/3" in history[18]
    assert history[19].startswith(night_id(20)) and "✗ 0/3" in history[19]
    changed = _texts(browser, "table.history td.hash.changed")
    assert changed == [f"Δ {PROMPT_AFTER}"]  # the one input that changed, on the night it did
    # the rate reads without a legend: a symbol in every square, light for passing
    squares = browser.evaluate("Array.from(document.querySelectorAll('.strip .sq'))"
                               ".map(function(s){return [s.textContent, s.dataset.rate];})")
    assert squares and all(s[0] == {"1": "✓", "0": "✗"}.get(s[1], "◐") for s in squares)
    browser.screenshot(options.root.parent / "trend.png")


@pytest.mark.slow  # a real headless Chromium
def test_nothing_recorded_changed_on_a_silent_series(tmp_path: Path, browser: Browser) -> None:
    series(tmp_path / "warehouse", "none")
    with _shown(browser, ViewOptions(tmp_path / "warehouse", str)) as served:
        browser.open_url(served.origin + "trends?since=99999d")
        browser.wait_for("document.body.dataset.loaded === '1'")
        changed = browser.evaluate("document.querySelector('table.regressions "
                                   "tr[data-scenario=BREAKS] td.what-changed').textContent")
    assert changed == "nothing recorded changed (flakiness, or the provider)"


def _an_argument(root: Path) -> str:
    """A value that one scenario's tool calls hold in the real sweep (a room id)."""
    rows = run_sql(root, "SELECT arguments FROM events WHERE run_id = 'sweep' AND kind = "
                   "'tool_call' AND arguments LIKE '%room_id%' ORDER BY trial_id, seq LIMIT 1",
                   all_runs=True).rows
    value = json.loads(rows[0][0])["room_id"]
    assert isinstance(value, str)
    return value


@pytest.mark.slow  # a real headless Chromium
def test_search_finds_trials_by_a_tool_argument_and_opens_the_trace(
        site: Viewer, browser: Browser, options: ViewOptions) -> None:
    value = _an_argument(options.root)
    by_hand = {r[0] for r in run_sql(options.root, """
        SELECT DISTINCT trial_id FROM events
        WHERE run_id = 'sweep' AND (
            (kind = 'tool_call' AND contains(lower(arguments), lower($v)))
            OR (kind = 'assistant_message' AND contains(lower(content), lower($v))))""".replace(
        "$v", "'" + value + "'"), all_runs=True).rows}
    browser.open_url(site.origin + f"search?run_id=sweep&text={value}")
    browser.wait_for("document.body.dataset.loaded === '1'")
    found = browser.evaluate("Array.from(document.querySelectorAll('table.results tbody tr'))"
                             ".map(function(tr){return tr.dataset.trial;})")
    assert set(found) == by_hand and found
    href = browser.evaluate("document.querySelector('table.results a.open-trace').href")
    browser.open_url(href)  # the HTML report's own trace viewer, opened on that trial
    browser.wait_for("!document.getElementById('viewer').hidden")
    dialog = browser.evaluate("document.querySelector('#viewer .dialog').textContent")
    assert value in dialog


@pytest.mark.slow  # a real headless Chromium
def test_hostile_text_renders_as_text_in_search_and_side_by_side(
        site: Viewer, browser: Browser) -> None:
    browser.open_url(site.origin + "search?run_id=base&scenario=S3")
    browser.wait_for("document.body.dataset.loaded === '1'")
    browser.evaluate("document.querySelectorAll('table.results input[type=checkbox]')"
                     ".forEach(function(b, i){ b.checked = i < 2; }); 1")
    browser.click("form.compare button[type=submit]")
    browser.wait_for("location.pathname === '/side' && document.body.dataset.loaded === '1'")
    text = browser.evaluate("document.getElementById('app').textContent")
    assert MARKUP in text and "[REDACTED]" in text and CANARY not in text
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.querySelectorAll('#app img, #app script').length") == 0
    # and were markup ever inserted, the page's policy (a header) would not run it
    browser.evaluate("var s = document.createElement('script'); s.textContent = "
                     "'window.__csp = 1'; document.body.appendChild(s); 1")
    assert browser.evaluate("typeof window.__csp") == "undefined"
    assert any("Content Security Policy" in e for e in browser.errors)
    browser.errors.clear()


@pytest.mark.slow  # a real headless Chromium
def test_side_by_side_aligns_two_models_turns_and_marks_each_first_violation(
        site: Viewer, browser: Browser, options: ViewOptions) -> None:
    rows = run_sql(options.root, """
        SELECT model, trial_id, first_violation_turn FROM trials
        WHERE run_id = 'sweep' AND scenario_id IN (
            SELECT scenario_id FROM trials WHERE run_id = 'sweep'
            GROUP BY scenario_id HAVING count(*) FILTER (WHERE NOT passed) = 1)
        ORDER BY scenario_id, model LIMIT 2""", all_runs=True).rows
    (golden, golden_id, none), (mutant, mutant_id, turn) = rows
    assert golden == MODELS[0] and mutant == MODELS[1] and none is None and turn is not None
    browser.open_url(site.origin + f"side?run=sweep&trial={golden_id}&run=sweep"
                     f"&trial={mutant_id}")
    browser.wait_for("document.body.dataset.loaded === '1'")
    heads = _texts(browser, "table.side th.side-head")
    assert MODELS[0] in heads[0] and MODELS[1] in heads[1] and "✗ failed" in heads[1]
    turns = browser.evaluate("Array.from(document.querySelectorAll('table.side tbody tr'))"
                             ".map(function(tr){return [tr.dataset.turn, tr.cells.length, "
                             "tr.cells[1].querySelectorAll('.ev.user').length, "
                             "tr.cells[2].querySelectorAll('.ev.user').length];})")
    # one row per turn, a column per model, each side's user message of that turn in its row
    assert [t[0] for t in turns] == [str(i + 1) for i in range(len(turns))] and len(turns) > 1
    assert all(t[1] == 3 and t[2] == 1 and t[3] == 1 for t in turns)
    marks = browser.evaluate("Array.from(document.querySelectorAll('.first-violation'))"
                             ".map(function(m){var tr = m.closest('tr'); return "
                             "[tr.dataset.turn, m.parentElement.cellIndex];})")
    assert marks == [[str(turn), 2]]  # the mutant's side, in its first violation's turn
    browser.screenshot(options.root.parent / "side.png")


def test_progress_counts_and_eta_from_the_committed_rows() -> None:
    """20 of 100 trials final (4 failed or agent errors, 2 incomplete to retry), 10 of them
    written in the 60 s since the latest invocation started: 80 left at 1 every 6 s."""
    from datetime import timedelta

    from reports.view.progress import progress, run_state

    now = datetime(2026, 6, 1, tzinfo=UTC)
    row: dict[str, object] = {"trials": 22, "incomplete": 2, "grid_size": 100, "failed": 3,
                              "agent_errors": 1, "latest_started_at": now - timedelta(seconds=60),
                              "done_since_latest": 10}
    found = progress(row, now)
    assert (found.done, found.grid, found.failed, found.incomplete) == (20, 100, 4, 2)
    assert found.eta_s == pytest.approx(480.0)
    assert progress({**row, "done_since_latest": 0}, now).eta_s is None  # unknown, not 0
    assert run_state(True, "r", lambda r: True) == "running"
    assert run_state(True, "r", lambda r: False) == "stopped"  # nobody holds its lock
    assert run_state(False, "r", lambda r: True) == "finished"


def test_the_index_rows_are_read_again_only_when_the_files_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import reports.view.data as data

    root = tmp_path / "warehouse"
    writer = WarehouseWriter(root, "r1")
    writer.write_batch({"runs": [_run_row("r1", 2, finished=False)]})
    reads: list[str] = []
    records = data._records
    monkeypatch.setattr(data, "_records", lambda *a: reads.append(a[1]) or records(*a))
    now = datetime.now(UTC)
    first = data.runs_index(root, now, None)
    assert data.runs_index(root, now, None) == first and reads == ["view_runs"]
    sink = BatchSink(writer, batch_size=1)
    sink(_results("r1")[0])  # a sweep commits a trial: a new file
    assert data.runs_index(root, now, None)[0]["trials"] == 1 and len(reads) == 2


@pytest.mark.parametrize("asked", [
    {"scenario": "S1", "outcome": "failed"}, {"model": MODELS[1], "outcome": "failed"},
    {"run_id": "cand", "outcome": "incomplete"}, {"failed_check": "argument:*.size=6@2.."},
    {"first_violation": "argument:*.size=6@2..", "run_id": "base"}])
def test_search_finds_what_sql_over_the_trials_view_finds(
        home: Path, asked: dict[str, str]) -> None:
    from reports.view import data

    found = {(r["run_id"], r["trial_id"]) for r in data.search(
        home / "warehouse", data.SearchQuery(**asked))}
    where = {"scenario": "scenario_id = $scenario", "model": "model = $model",
             "run_id": "run_id = $run_id",
             "first_violation": "first_violation_check = $first_violation",
             "outcome": "CASE WHEN status <> 'complete' THEN status WHEN passed THEN 'passed' "
                        "WHEN NOT passed THEN 'failed' ELSE 'unknown' END = $outcome",
             "failed_check": "EXISTS (SELECT 1 FROM checks AS c WHERE c.run_id = t.run_id AND "
                             "c.trial_id = t.trial_id AND NOT c.passed AND "
                             "c.check_id = $failed_check)"}
    sql = ("SELECT run_id, trial_id FROM trials AS t WHERE "
           + " AND ".join(where[k] for k in asked))
    expected = set(run_sql(home / "warehouse", sql, dict(asked), all_runs=True).rows)
    assert found == expected and found


def test_a_trace_of_a_run_id_that_names_no_run_is_refused(options: ViewOptions) -> None:
    client = TestClient(create_app(options), base_url="http://127.0.0.1")
    for run_id in ("../../etc", "*", "nope"):
        answer = client.get("/api/trace", params={"run_id": run_id, "trial_id": "x"})
        assert answer.status_code == 400 and "agentsweep runs" in answer.json()["error"]


def test_a_client_that_never_finishes_its_request_is_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slowloris: connections dribbling a header byte at a time are closed once the request
    time limit passes; a whole request still gets its answer."""
    import socket
    import time
    import urllib.parse
    import urllib.request

    from reports.view import slow_clients

    monkeypatch.setattr(slow_clients, "REQUEST_TIMEOUT_S", 0.5)
    with viewer(ViewOptions(tmp_path / "warehouse", str)) as served:
        where = urllib.parse.urlsplit(served.origin)
        slow = [socket.create_connection((str(where.hostname), int(where.port or 80)))
                for _ in range(20)]
        for sock in slow:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the end
            sock.settimeout(2)
        for _ in range(4):  # still dribbling, past the limit
            time.sleep(0.2)
            for sock in slow:
                try:
                    sock.sendall(b"X-A: b\r\n")
                except OSError:
                    pass
        closed = 0
        for sock in slow:
            try:
                closed += sock.recv(1024) == b""
            except TimeoutError:  # still open: held
                pass
            except OSError:  # reset: dropped
                closed += 1
            sock.close()
        assert closed == len(slow)
        with urllib.request.urlopen(served.origin, timeout=10) as answer:
            assert answer.status == 200
