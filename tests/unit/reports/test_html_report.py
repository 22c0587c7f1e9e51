"""The HTML report (issue 14): `agentsweep report html` writes one self-contained file whose
matrix and counts are the warehouse's, opened in a real headless Chromium: a click on a cell
lists its trials, a click on a failed trial shows its dialog with the first violation marked;
no console error, no markup from the data runs, no secret lands; bad input exits 2 with
nothing written."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.browser import Browser, chromium_path
from helpers.commands import cli
from helpers.html_fixtures import BIDI, CANARY, MARKUP, base_and_candidate, conditions_run

from reports.decision import decide
from reports.html import ReportOptions, render, write_report
from reports.html.colour import CIVIDIS, VIRIDIS, luminance, sample
from reports.html.markup import embedded_json
from warehouse.query import run_sql


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("html") / "home"
    base_and_candidate(home / "warehouse")
    conditions_run(home / "warehouse")
    return home


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    monkeypatch.setenv("AGENTSWEEP_CANARY_API_KEY", CANARY)
    return home


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium_path() is None:
        pytest.fail("chromium is not installed: `make setup-dev` installs it (apt-get install "
                    "chromium)")
    with Browser() as b:
        yield b


def _report(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    code, stdout, stderr = cli("report", "html", *args, "-o", str(out))
    assert code == 0, stdout + stderr
    return out


@pytest.mark.slow  # a real headless Chromium
def test_the_matrix_cells_and_counts_are_the_warehouses(env: Path, tmp_path: Path,
                                                        browser: Browser) -> None:
    path = _report(tmp_path, "--run-id", "cand")
    browser.open(path)
    shown = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix td.cell[data-cell]')).map(function(td)"
        "{return [td.closest('tr').querySelector('th').textContent, td.dataset.k, td.dataset.n,"
        " td.textContent];})")
    expected = run_sql(env / "warehouse",
                       "SELECT scenario_id, count(*) FILTER (WHERE passed), count(*) FILTER "
                       "(WHERE status <> 'incomplete'), count(*) FILTER (WHERE status = "
                       "'incomplete') FROM trials WHERE run_id = 'cand' "
                       "GROUP BY scenario_id, memory_mode ORDER BY scenario_id, memory_mode")
    assert [(s, int(k), int(n)) for s, k, n, _ in shown] == [
        (s, k, n) for s, k, n, _ in expected.rows]
    html = path.read_text("utf-8")  # self-contained: nothing to load, from anywhere
    assert not re.search(r"<link|<iframe|<object|<embed|<[a-z]+[^>]*\ssrc=|url\((?!#)|@import"
                         r"|@font-face", html)
    assert "default-src &#x27;none&#x27;" in html  # the CSP, escaped as an attribute value
    texts = {s: t for s, _, _, t in shown}
    assert texts["S1"] == "✗ 0/3" and texts["S4"] == "✓ 2/2 +1?"  # the incomplete one apart
    assert texts["S2"] == "◐ 1/3"  # a symbol says the rate without colour or legend
    counts = browser.evaluate("document.getElementById('status-counts').textContent")
    statuses = run_sql(env / "warehouse", "SELECT count(*) FILTER (WHERE passed), count(*) "
                       "FILTER (WHERE status = 'complete' AND NOT passed), count(*) FILTER "
                       "(WHERE status = 'incomplete') FROM trials WHERE run_id = 'cand'").rows[0]
    assert counts == "passed: {}failed: {}incomplete: {}".format(*statuses)
    assert statuses == (12, 10, 2)
    assert browser.evaluate("document.getElementById('incomplete').className") == "bad"
    usage = browser.evaluate("document.getElementById('usage').textContent")
    assert "unknown" in usage  # cost and input tokens were not reported: never 0
    assert browser.errors == []
    browser.screenshot(tmp_path / "run-report.png")


@pytest.mark.slow  # a real headless Chromium
def test_a_click_on_a_failed_cell_opens_the_trial_and_its_first_violation(
        env: Path, tmp_path: Path, browser: Browser) -> None:
    path = _report(tmp_path, "--run-id", "cand")
    browser.open(path)
    browser.click("#matrix td.cell[data-k='0']")
    time.sleep(0.1)
    listed = browser.evaluate("Array.from(document.querySelectorAll('#viewer button.trial'))"
                              ".map(function(b){return b.textContent;})")
    assert len(listed) == 3 and all("first violation argument:*.size=6@2.." in t for t in listed)
    browser.click("#viewer button.trial")
    time.sleep(0.1)
    mark = browser.evaluate("document.getElementById('first-violation').textContent")
    assert mark == "⚑ first violation: argument:*.size=6@2.. (turn 2, step 0)"
    first = browser.evaluate("document.querySelector('li.check.first').textContent")
    assert first.startswith("FAIL argument:*.size=6@2.. @ turn 2 step 0")
    dialog = browser.evaluate("document.querySelector('#viewer .dialog').textContent")
    for seen in ("[1.0] user", "→ book", "intercepted", "memory after the user's message",
                 "constraints.size", "[2.1] assistant"):
        assert seen in dialog, seen
    # the mark sits right after the events of turn 2 step 0, before the reply of step 1
    assert dialog.index("⚑ first violation") < dialog.index("[2.1] assistant")
    viewer = browser.evaluate("document.getElementById('viewer').textContent")
    assert "attempts (2)" in viewer and "incompletetimeout: no answer in 120 s" in viewer
    assert browser.errors == []
    browser.screenshot(tmp_path / "trace-viewer.png")
    assert (tmp_path / "trace-viewer.png").stat().st_size > 10_000


@pytest.mark.slow  # a real headless Chromium
def test_markup_in_the_data_renders_as_text_and_runs_nothing(env: Path, tmp_path: Path,
                                                            browser: Browser) -> None:
    path = _report(tmp_path, "--run-id", "base", "--passed-sample", "100")
    text = path.read_text("utf-8")
    assert "<script>window.__pwned" not in text and "<img src=x" not in text
    assert text.count("<script") == 2  # the JSON block and the viewer's own script
    browser.open(path)
    trial = browser.evaluate("Object.keys(JSON.parse(document.getElementById('report-data')"
                             ".textContent).traces).filter(function(t){return /^S3-/.test(t);})"
                             "[0]")
    browser.evaluate(f"document.body.insertAdjacentHTML('beforeend', '<button id=\"t\" "
                     f"data-trial=\"{trial}\">t</button>')")
    browser.click("#t")
    time.sleep(0.1)
    dialog = browser.evaluate("document.querySelector('#viewer .dialog').textContent")
    assert MARKUP in dialog  # shown as text
    assert "invoice<U+202E>fdp.exe<U+200B>" in dialog and BIDI not in dialog  # made visible
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.querySelectorAll('#viewer img, #viewer script').length") \
        == 0
    assert browser.errors == []
    # and were markup ever inserted, the page's policy would not run it
    assert "default-src 'none'" in browser.evaluate(
        "document.querySelector('meta[http-equiv]').content")
    browser.evaluate("var s = document.createElement('script'); s.textContent = "
                     "'window.__csp = 1'; document.body.appendChild(s); 1")
    assert browser.evaluate("typeof window.__csp") == "undefined"
    assert any("Content Security Policy" in e for e in browser.errors)
    browser.errors.clear()


def test_no_secret_lands_in_the_file(env: Path, tmp_path: Path) -> None:
    path = _report(tmp_path, "--run-id", "base", "--passed-sample", "100")
    text = path.read_text("utf-8")
    assert CANARY not in text and CANARY[:16] not in text
    assert "[REDACTED]" in text  # the canary was there (S3's reply) and was redacted


@pytest.mark.slow  # a real headless Chromium
def test_a_comparison_shows_the_gates_verdict_and_reasons(env: Path, tmp_path: Path,
                                                          browser: Browser) -> None:
    path = _report(tmp_path, "--run-id", "cand", "--baseline", "base")
    decision = decide(env / "warehouse", "base", "cand")
    browser.open(path)
    verdict = browser.evaluate("document.getElementById('verdict').textContent")
    assert verdict == f"Gate: {decision.gate.verdict.upper()} (exit {decision.gate.exit_code})"
    reasons = browser.evaluate("Array.from(document.querySelectorAll('#reasons li'))"
                               ".map(function(li){return li.textContent;})")
    assert reasons == decision.gate.reasons and any("incomplete run" in r for r in reasons)
    counts = browser.evaluate("document.getElementById('transition-counts').textContent")
    assert "new failure: 2" in counts  # S1 in both modes
    interval = decision.interval
    assert interval is not None
    assert f"[{interval.low:+.3f}, {interval.high:+.3f}]" in browser.evaluate(
        "document.getElementById('interval').textContent")
    assert "not reported" in browser.evaluate(
        "document.getElementById('baseline-models').textContent")
    assert browser.evaluate("document.querySelector('#paired-outcomes [data-pair="
                            "\"passed-failed\"]').textContent") == "6"
    browser.screenshot(tmp_path / "comparison.png", full_page=True)
    browser.click("#transitions td.cell-link")  # S1 chat: 3/3 -> 0/3
    time.sleep(0.1)
    sides = browser.evaluate("Array.from(document.querySelectorAll('#viewer button.trial'))"
                             ".map(function(b){return [b.dataset.side || 'cand', "
                             "b.textContent];})")
    assert [side for side, _ in sides] == ["cand"] * 3 + ["baseline"] * 3
    assert all(text.endswith("passed") for side, text in sides if side == "baseline")
    browser.click("#viewer button.trial[data-side='baseline']")
    time.sleep(0.1)
    viewer = browser.evaluate("document.getElementById('viewer-body').textContent")
    assert viewer.startswith("baseline run base") and "PASSED" in viewer
    assert browser.errors == []


@pytest.mark.slow  # a real headless Chromium
def test_the_failure_map_shows_zeros_with_their_bound_and_greys_excluded_rows(
        env: Path, tmp_path: Path, browser: Browser) -> None:
    path = _report(tmp_path, "--run-id", "cond")
    browser.open(path)
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('table.failure-map tbody tr')).map(function(tr)"
        "{return [tr.querySelector('th').textContent, tr.dataset.counted,"
        " Array.from(tr.querySelectorAll('td.cell')).map(function(td){return td.textContent;})"
        "];})")
    cells = {r[0]: (r[1], r[2]) for r in rows}
    expected = run_sql(env / "warehouse", "SELECT condition_id, format, k, n, counted FROM "
                       "failure_map WHERE run_id = 'cond' ORDER BY condition_id, format")
    by_format = {(c, f): (k, n) for c, f, k, n, _ in expected.rows}
    assert by_format[("ship/assembled", "plain")] == (0, 2)
    assert cells["ship/assembled"][0] == "yes" and cells["ship/paid"][0] == "no"
    assert "0/2 ≤ 100%" in cells["ship/assembled"][1]  # 3/n for n = 2, capped at 1
    assert "2/2" in cells["ship/assembled"][1]  # canonical_steps and the repeat
    note = browser.evaluate("document.getElementById('excluded-note').textContent")
    assert "the allowed twin was executed 0/2" in note
    browser.click("table.failure-map td.cell[data-k='2']")
    time.sleep(0.1)
    assert browser.evaluate("document.querySelectorAll('#viewer button.trial').length") == 2
    assert browser.errors == []


@pytest.mark.parametrize("case", ["unknown-run", "no-shared-scenarios", "missing-folder"])
def test_bad_input_is_one_line_exit_2_and_no_file(case: str, env: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    args = {"unknown-run": ["--run-id", "nope", "-o", str(out)],
            "no-shared-scenarios": ["--run-id", "cond", "--baseline", "base", "-o", str(out)],
            "missing-folder": ["--run-id", "base", "-o", str(tmp_path / "no" / "r.html")]}[case]
    code, _, err = cli("report", "html", *args)
    assert code == 2
    message = {"unknown-run": "--run-id: no run 'nope' in the warehouse",
               "no-shared-scenarios": "nothing to compare: no shared scenarios",
               "missing-folder": "does not exist"}[case]
    assert message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_failure_mid_write_leaves_no_file(env: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import reports.html.page as page

    out = tmp_path / "r.html"
    real = page.atomic_text

    class Boom(Exception):
        pass

    def failing(path: Path) -> object:
        class Handle:
            def __enter__(self) -> object:
                self.inner = real(path)
                handle = self.inner.__enter__()
                handle.write("<!doctype html><html>half")
                raise Boom()

            def __exit__(self, *exc: object) -> bool:
                self.inner.__exit__(Boom, Boom(), None)
                return False
        return Handle()

    monkeypatch.setattr(page, "atomic_text", failing)
    with pytest.raises(Boom):
        write_report(env / "warehouse", out, "base", ReportOptions(scrub=str))
    assert list(tmp_path.iterdir()) == []


def test_the_trace_cap_embeds_failed_trials_first_then_a_sample(env: Path) -> None:
    from reports.html import TraceOptions

    text = render(env / "warehouse", "cand",
                  ReportOptions(scrub=str, traces=TraceOptions(max_failed=2, passed_sample=1)))
    assert re.search(r'data-traces="3"', text)


@pytest.mark.slow
def test_chromium_reaches_no_address_but_loopback(env: Path, tmp_path: Path) -> None:
    """Every connect() of the browser and its children, traced: none to an internet address
    succeeds (its network namespace has none; its resolver maps every name to nothing)."""
    import shutil

    if shutil.which("strace") is None:
        pytest.fail("strace is not installed (.ci/run installs it)")
    path = _report(tmp_path, "--run-id", "cand", "--baseline", "base")
    log = tmp_path / "connect.log"
    with Browser(tracer=["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect",
                         "-o", str(log)]) as b:
        b.open(path)
        b.click("#matrix td.cell")
        time.sleep(2)  # background work of a fresh profile starts in the first seconds
    lines = log.read_text().splitlines()
    assert any("connect(" in line for line in lines)  # the trace did record the calls
    reached = []
    for i, line in enumerate(lines):
        if "sa_family=AF_INET" not in line or re.search(r'"127\.|"::1"|"::ffff:127\.', line):
            continue
        if "<unfinished" in line:  # its result is on the "resumed" line of the same process
            # strace pads the pid to five columns ("%-5u "), so match on whitespace
            resumed = re.compile(rf"^{line.split()[0]}\s+<\.\.\. connect resumed")
            result = next((x for x in lines[i + 1:] if resumed.match(x)), None)
            if result is None:  # the process ended inside connect(): it never connected
                continue
            line = result
        if "= -1 " not in line:
            reached.append(line)
    assert reached == []


def test_embedded_json_cannot_end_its_script_block() -> None:
    text = embedded_json({"a": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert text == '{"a":"\\u003c/script\\u003e\\u003c!-- \\u0026 \\u2028"}'


def test_the_colour_scales_get_lighter_monotonically() -> None:
    """Readable in grey: luminance rises from one end to the other (cividis, viridis)."""
    for stops in (CIVIDIS, VIRIDIS):
        values = [luminance(sample(stops, i / 20)) for i in range(21)]
        assert values == sorted(values)


def test_the_html_package_imports_nothing_of_pipeline() -> None:
    import subprocess
    import sys

    from conftest import REPO

    code = ("import sys, reports.html\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pipeline', 'flows'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == ""


@pytest.mark.slow  # a real headless Chromium
def test_a_trials_judge_verdicts_stand_beside_its_code_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser) -> None:
    from pipeline.catalog import catalogs_root, load_suite
    from pipeline.judge import JudgeOptions, judge_run
    from pipeline.sweep.grid import ModelConfig, expand
    from pipeline.trial.run import RunContext, run_trial, tables_of
    from warehouse.writer import WarehouseWriter

    home = tmp_path / "home"
    root = home / "warehouse"
    suite = load_suite(catalogs_root() / "orders" / "suites" / "orders.jsonl")
    results = [run_trial(spec, RunContext("judged", "test")) for spec in expand(
        [suite], [ModelConfig("reference/golden")], ["default"], ["chat"], 1)]
    WarehouseWriter(root, "judged").write_batch(tables_of(results))
    judge_run(root, "judged", JudgeOptions(ModelConfig("reference/judge-seed").resolved()))
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    path = _report(tmp_path, "--run-id", "judged", "--passed-sample", "10")
    timeout = next(r.trial.trial_id for r in results
                   if r.trial.scenario_id == "timeout-after-commit")
    browser.open(path)
    browser.evaluate(f"document.body.insertAdjacentHTML('beforeend', '<button id=\"j\" "
                     f"data-trial=\"{timeout}\">j</button>')")
    browser.click("#j")
    time.sleep(0.1)
    judged = browser.evaluate("document.querySelector('#viewer .judgments').textContent")
    assert "FAIL reference/judge-seed / explanation v1" in judged
    assert "invents a completed action" in judged and "(0 pass, 3 fail, 0 error of 3)" in judged
    failed_code = browser.evaluate("document.querySelectorAll('#viewer li.check.failed:not("
                                   ".judgment)').length")
    assert failed_code == 0  # the code passed it: the judge's verdict changes nothing
    assert browser.errors == []


@pytest.mark.slow  # a real headless Chromium
def test_signals_are_listed_but_not_counted_among_the_failed_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser) -> None:
    from pipeline.catalog import catalogs_root, load_suite
    from pipeline.sweep.grid import ModelConfig, expand
    from pipeline.trial.run import RunContext, run_trial, tables_of
    from warehouse.writer import WarehouseWriter

    home = tmp_path / "home"
    suite = load_suite(catalogs_root() / "tau2_retail" / "suites" / "retail.jsonl")
    results = [run_trial(spec, RunContext("signals", "test")) for spec in expand(
        [suite], [ModelConfig("reference/mutant-drops-last-write")], ["default"], ["chat"], 1)
        if spec.scenario.id == "105"]  # its one gold write is refused anyway: only ACTION fails
    assert results[0].trial.passed is True
    WarehouseWriter(home / "warehouse", "signals").write_batch(tables_of(results))
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    path = _report(tmp_path, "--run-id", "signals", "--passed-sample", "10")
    browser.open(path)
    browser.evaluate("document.body.insertAdjacentHTML('beforeend', '<button id=\"s\" "
                     f"data-trial=\"{results[0].trial.trial_id}\">s</button>')")
    browser.click("#s")
    time.sleep(0.1)
    heading = browser.evaluate("Array.from(document.querySelectorAll('#viewer h3')).map("
                               "function(h){return h.textContent;}).filter(function(t){"
                               "return t.indexOf('code checks') === 0;})[0]")
    counted = [c for c in results[0].checks if c.counted]
    signals = len(results[0].checks) - len(counted)
    assert len(counted) == 1 and signals >= 2
    assert heading == f"code checks (0 failed of 1; {signals} signal(s) not counted in passed)"
    listed = browser.evaluate("document.querySelector('#viewer ul.checks').textContent")
    assert "FAIL action (a signal: not counted in passed)" in listed
    assert "ok said_vs_done (a signal: not counted in passed)" in listed
    assert browser.errors == []


def test_bidi_and_zero_width_characters_are_visible_on_the_page_and_in_the_viewer() -> None:
    import re

    from reports.html.markup import _HIDDEN, Escaper

    assert Escaper(str)("pay\u202eexe.pdf\u200b<b>") == (
        "pay&lt;U+202E&gt;exe.pdf&lt;U+200B&gt;&lt;b&gt;")
    script = (Path(__file__).resolve().parents[3] / "reports" / "html" / "assets"
              / "report.js").read_text("utf-8")
    (js_class,) = re.findall(r"var HIDDEN = /\[(.*?)\]/g;", script)
    as_python = re.sub(r"\\u([0-9A-F]{4})", lambda m: chr(int(m.group(1), 16)), js_class)
    assert {chr(c) for c in range(0x3000) if re.fullmatch(f"[{as_python}]", chr(c))} == {
        chr(c) for c in range(0x3000) if _HIDDEN.fullmatch(chr(c))}  # one rule, two places
    assert "node.textContent = visible(text)" in script


@pytest.mark.parametrize(("repeats", "curves"), [(2, 0), (3, 2)])
def test_a_pass_hat_k_curve_is_drawn_only_when_it_carries_something(
        tmp_path: Path, repeats: int, curves: int) -> None:
    """With two repeats pass^k joins two numbers printed beside it: no chart; from three on,
    the run's curve and the unstable cell's."""
    from helpers.gate_fixtures import cell, write

    root = tmp_path / "warehouse"
    write(root, "r", cell("r", "FLAKY", [True] + [False] * (repeats - 1)))
    text = render(root, "r", ReportOptions(scrub=str))
    section = text[text.index('id="stability-section"'):text.index('id="violations-section"')]
    assert section.count('<svg class="spark"') == curves
    assert f"◐ 1/{repeats}" in section
