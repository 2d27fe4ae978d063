"""The READMEs' run-produced tables are generated from the committed run record
(``empirical/pipeline/published/claims.json``): a number edited by hand, a README left behind by a new
record, or a builder changed without re-rendering fails here."""

import json
import shutil
from pathlib import Path

import pytest

from empirical.pipeline import published
from empirical.pipeline.published import claims_results, claims_table
from empirical.pipeline.published.tracked import track
from empirical.pipeline.reproduce import PARTS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def claims():
    return published.committed()


@pytest.fixture(scope="module")
def texts(claims):
    return published.rendered(claims)


@pytest.mark.parametrize("name", sorted(published._tables()))
def test_every_generated_region_equals_its_rendering_from_the_committed_run(name, texts):
    doc = published._tables()[name].doc
    assert published.ROOT == ROOT  # where --publish and --rerender write: the checkout, wherever the module sits
    region = published.region((ROOT / doc).read_text(), name)
    assert region is not None, f"{doc} has no markers for table {name}"
    assert region == texts[name], (f"{doc}, table {name}, differs from empirical/pipeline/published/claims.json: "
                                   "run sinks report --rerender (wording) or --results DIR --publish (numbers)")


def test_the_committed_record_holds_exactly_what_the_tables_read(claims):
    """Rendering from the record reads every field it holds and no other: it is the builders'
    own digest of a run, not an edited or padded file."""
    view, mirror = track(claims["inputs"])
    published._render_all(view)
    assert mirror == claims["inputs"]
    assert set(claims["inputs"]) <= set(PARTS) and claims["provenance"]["parts"]
    assert len(json.dumps(claims)) < 200_000  # committed size: what the tables quote, no more


def test_a_results_folder_digests_to_the_same_record(tmp_path, claims):
    for name, record in claims["inputs"].items():
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    assert published.digest(tmp_path)["inputs"] == claims["inputs"]


def test_a_number_edited_by_hand_is_caught_and_publish_rewrites_it(tmp_path, claims, texts):
    for table in published._tables().values():
        (tmp_path / table.doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / table.doc, tmp_path / table.doc)
    readme = tmp_path / "README.md"
    text = readme.read_text()
    region = published.region(text, "claims")
    digit = next(i for i, ch in enumerate(region) if ch.isdigit() and i > region.index("| result |"))
    edited = region[:digit] + str((int(region[digit]) + 1) % 10) + region[digit + 1:]
    readme.write_text(text.replace(region, edited))
    assert published.region(readme.read_text(), "claims") != texts["claims"]
    assert readme in published.rewrite_docs(claims, root=tmp_path)
    assert published.region(readme.read_text(), "claims") == texts["claims"]
    assert published.rewrite_docs(claims, root=tmp_path) == []  # nothing left to change


def test_a_run_without_parts_says_what_is_missing(tmp_path):
    (tmp_path / "proofs.json").write_text(json.dumps({"status": "failed", "claims": [], "tables": []}))
    columns, rows = published._render_all(track({"proofs": json.loads((tmp_path / "proofs.json").read_text())})[0])[
        "claims"]
    assert columns == claims_table.COLUMNS and len(rows) == len(claims_table.ROWS)
    by_hand = {row.claim for row in claims_table.ROWS if row.result in (claims_results.semantics, claims_results.lm_probe)}
    result = claims_table.COLUMNS.index("result")
    assert all(r[result].startswith("not in this run") for r in rows if r[0] not in by_hand)


def test_a_builder_that_needs_more_than_the_record_says_how_to_regenerate(claims, monkeypatch):
    from constructions.errors import BadInput

    def needs_more(R):
        return R.details("proofs")["a field no record has"]

    monkeypatch.setattr(claims_table, "ROWS", claims_table.ROWS + (claims_table.Row("x", "", "", "", needs_more),))
    with pytest.raises(BadInput, match="regenerate it from a results folder"):
        published.rendered(claims)


def test_markers_must_exist(tmp_path, claims):
    from constructions.errors import BadInput

    for table in published._tables().values():
        (tmp_path / table.doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / table.doc).write_text("no markers here\n")
    with pytest.raises(BadInput, match="has no region"):
        published.rewrite_docs(claims, root=tmp_path)


def test_report_command_writes_the_digest_and_rerender_needs_no_results(tmp_path, capsys, claims, monkeypatch):
    from empirical.pipeline import cli

    for name, record in claims["inputs"].items():
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    assert cli.main(["report", "--results", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "claims.json").read_text())["inputs"] == claims["inputs"]
    calls = []
    monkeypatch.setattr(published, "rewrite_docs", lambda c: calls.append(c) or [])
    assert cli.main(["report", "--rerender"]) == 0 and calls[0]["inputs"] == claims["inputs"]
    assert cli.main(["report", "--rerender", "--publish"]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_the_abstaining_kinds_sink_row_reads_the_kinds_table_and_judges_every_seed():
    """softmax1 / sink_logit with BOS available: mean and min BOS mass from the beyond part's kinds
    table; a seed at or below 0.99 makes the row *not met*."""
    from empirical.pipeline.published.records import NotInRun, Records

    columns = ["kind", "1x1 BOS mass (mean / min over seeds)", "1x1 row mass"]

    def records(low: str) -> Records:
        rows = [["softmax1", f"0.9970 / {low}", "0.9972"], ["sink_logit", "0.9973 / 0.9957", "0.9976"]]
        return Records({"beyond": {"status": "ok", "tables": [
            {"title": "attention kinds: predicted against measured", "columns": columns, "rows": rows}]}})

    good = claims_results.abstainers_sink(records("0.9956"))
    assert good.verdict == "observed" and "softmax1: BOS mass 0.997 (min 0.9956), row mass 0.9972" in good.figure
    assert claims_results.abstainers_sink(records("0.9900")).verdict == "not met"
    with pytest.raises(NotInRun):
        claims_results.abstainers_sink(Records({"beyond": {"status": "ok", "tables": [
            {"title": "attention kinds: predicted against measured", "columns": columns, "rows": []}]}}))
