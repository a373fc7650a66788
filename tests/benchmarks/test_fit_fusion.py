"""benchmarks/fit_fusion.py --write stores each model's fit in toolidx/search/calibration.json, the
file toolidx.search.calibration loads: the shipped file is well-formed for every model id, is read
whole, and what --write writes is what the loader reads back."""

from __future__ import annotations

import dataclasses
import json
import math
import sys

from conftest import REPO

from toolidx.search import calibration as cal

sys.path.insert(0, str(REPO / "benchmarks"))
import fit_fusion

SHIPPED = REPO / "toolidx" / "search" / "calibration.json"
FIELDS = {f.name for f in dataclasses.fields(cal.ModelFit)}
OPTIONAL = {"learned", "server", "gate", "near"}  # a model fitted without them goes without: they move nothing


def _well_formed(model: str, f: dict) -> list[str]:
    bad = [] if set(f) - OPTIONAL == FIELDS - OPTIONAL else [f"{model}: fields {sorted(set(f) ^ FIELDS)}"]
    if "server" in f and not (isinstance(f["server"], (int, float)) and 0 <= f["server"] <= 1):
        bad.append(f"{model}: server = {f['server']!r}, want a weight in [0, 1]")
    learned = f.get("learned")  # optional: a model without it is never lifted (search.learned)
    if learned is not None and not (
        0 <= learned.get("floor", -1) < learned.get("full", -1) <= 1
        and learned.get("weight", -1) >= 0
        and isinstance(learned.get("saturate"), int)
        and learned.get("fitted")
    ):
        bad.append(f"{model}: learned = {learned!r}, want 0 <= floor < full <= 1, weight >= 0, saturate, fitted")
    for k in ("cos", "coverage", "name"):
        if not (isinstance(f.get(k), (int, float)) and 0 <= f[k] <= 1):
            bad.append(f"{model}: {k} = {f.get(k)!r}, want a weight in [0, 1]")
    ramp = f.get("ramp")
    if ramp is not None and not (
        isinstance(ramp, list) and len(ramp) == 2 and all(isinstance(x, int) for x in ramp) and 0 <= ramp[0] < ramp[1]
    ):
        bad.append(f"{model}: ramp = {ramp!r}, want [lo, hi] terms with lo < hi")
    for mode in ("hybrid", "semantic"):  # keyword's constants belong to no model (calibration.py)
        platt = f.get("platt", {}).get(mode)
        if not (isinstance(platt, list) and len(platt) == 2 and all(map(math.isfinite, platt)) and platt[0] > 0):
            bad.append(f"{model}: platt.{mode} = {platt!r}, want [slope > 0, bias]")
        lw = f.get("listwise", {}).get(mode)  # a > 0 and b >= 0: the score keeps the ranking
        if not (isinstance(lw, list) and len(lw) == 3 and all(map(math.isfinite, lw)) and lw[0] > 0 and lw[1] >= 0):
            bad.append(f"{model}: listwise.{mode} = {lw!r}, want [a > 0, b >= 0, c]")
        t = f.get("threshold", {}).get(mode)
        if not (isinstance(t, float) and 0 < t < 1):
            bad.append(f"{model}: threshold.{mode} = {t!r}, want a score in (0, 1)")
    if any(set(f.get(k, {})) != {"hybrid", "semantic"} for k in ("platt", "listwise", "threshold")):
        bad.append(f"{model}: modes {[sorted(f.get(k, {})) for k in ('platt', 'listwise', 'threshold')]}")
    action = f.get("action")  # weights subtracted from the score's logit: never negative
    if not (isinstance(action, list) and len(action) == 3 and all(isinstance(x, float) and x >= 0 for x in action)):
        bad.append(f"{model}: action = {action!r}, want [opposed >= 0, reads_only >= 0, writes >= 0]")
    if not (isinstance(f.get("fitted"), str) and f["fitted"]):
        bad.append(f"{model}: no `fitted` (on what, by what)")
    return bad


def test_the_shipped_file_is_the_one_the_loader_reads_and_is_well_formed():
    assert cal.FITS_FILE.resolve() == SHIPPED.resolve()
    doc = json.loads(SHIPPED.read_text())
    bad = [b for model, f in doc["models"].items() for b in _well_formed(model, f)]
    assert not bad, bad
    # every model id is read, and read whole (a field the loader dropped would differ here)
    assert set(cal.FITS) == set(doc["models"])
    for model, f in doc["models"].items():
        got = dataclasses.asdict(cal.FITS[model])
        got["ramp"] = list(got["ramp"]) if got["ramp"] else None
        got["action"] = list(got["action"])
        if got["learned"] is None:
            del got["learned"]
        if "server" not in f and got["server"] == 0.0:  # a model fitted before server evidence
            del got["server"]
        if got.get("gate", 0) is None:  # a model without a far gate (search.gate)
            del got["gate"]
        if got.get("near", 0) is None:  # a model without a near gate (search.near)
            del got["near"]
        for k in ("platt", "listwise"):
            got[k] = {mode: list(v) for mode, v in got[k].items()}
        assert got == f, model


def test_every_model_toolidx_ships_or_defaults_to_is_calibrated():
    """The reference model (keyword-only and model-less scores) and toolidx's own models (v2, the
    default, and v1), by the names their model.json give (the index's embed_model), each have a fit."""
    packaged = {
        json.loads((REPO / "toolidx" / "models" / folder / "model.json").read_text())["name"]
        for folder in ("tool-minilm-l6-v2", "tool-minilm-l6")
    }
    assert len(packaged) == 2 and {cal.REFERENCE_MODEL, *packaged} <= set(cal.FITS)
    assert all(cal.is_calibrated(m) for m in (cal.REFERENCE_MODEL, *packaged))


def test_what_write_stores_is_what_the_loader_reads(tmp_path, monkeypatch):
    """fit_fusion.write into a copy of the file, then the loader over that copy: the new model's
    fit comes back as written, and the models already there are kept."""
    copy = tmp_path / "calibration.json"
    copy.write_text(SHIPPED.read_text())
    monkeypatch.setattr(cal, "FITS_FILE", copy)
    hyb = {
        "cos": 0.8,
        "coverage": 0.1,
        "name": 0.05,
        "ramp": [5, 15],
        "platt": [9.5, -7.25],
        "listwise": [0.5, 10.0, -2.9],
        "threshold": 0.004,
        "action": [4.0, 2.0, 1.0],
        "server": 0.25,
    }
    fit_fusion.write("test/new-model", hyb, ([10.5, -7.0], [0.6, 9.0, -3.1], 0.00612))
    fits = cal._read_fits()
    assert set(fits) == set(cal.FITS) | {"test/new-model"}
    assert all(fits[m] == cal.FITS[m] for m in cal.FITS)
    new = fits["test/new-model"]
    assert (new.cos, new.coverage, new.name, new.ramp) == (0.8, 0.1, 0.05, (5, 15))
    assert new.platt == {"hybrid": (9.5, -7.25), "semantic": (10.5, -7.0)}
    assert new.listwise == {"hybrid": (0.5, 10.0, -2.9), "semantic": (0.6, 9.0, -3.1)}
    assert new.threshold == {"hybrid": 0.004, "semantic": 0.0061}
    assert new.action == (4.0, 2.0, 1.0) and new.server == 0.25
    assert not _well_formed("test/new-model", json.loads(copy.read_text())["models"]["test/new-model"])


def test_write_keeps_what_other_fits_stored(tmp_path, monkeypatch):
    """A model's refit (--keep-fusion, --write) replaces what fit_fusion fits and keeps the keys
    other scripts fitted (learned_sim's `learned`, gate_dev's `gate`, any new one, e.g. `near`):
    it kept only `learned` and `gate`, so a refit dropped a newer gate's constants."""
    doc = json.loads(SHIPPED.read_text())
    model = cal.REFERENCE_MODEL
    doc["models"][model]["near"] = {"cos": 0.3, "fitted": "another script"}
    copy = tmp_path / "calibration.json"
    copy.write_text(json.dumps(doc))
    monkeypatch.setattr(cal, "FITS_FILE", copy)
    old = doc["models"][model]
    hyb = {k: old[k] for k in ("cos", "coverage", "name", "ramp", "server")} | {
        "platt": old["platt"]["hybrid"],
        "listwise": old["listwise"]["hybrid"],
        "threshold": old["threshold"]["hybrid"],
        "action": [6.0, 10.0, 3.0],
    }
    sem = (old["platt"]["semantic"], old["listwise"]["semantic"], old["threshold"]["semantic"])
    fit_fusion.write(model, hyb, sem)
    new = json.loads(copy.read_text())["models"][model]
    assert new["near"] == {"cos": 0.3, "fitted": "another script"} and new["action"] == [6.0, 10.0, 3.0]
    assert all(new[k] == old[k] for k in old if k not in ("action", "fitted"))


def _evidence(rng, n: int) -> list[tuple[str, dict]]:
    """n candidates' evidence as search.gather leaves it (bm25 0 for a tool only the vectors found)."""
    out = []
    for i in range(n):
        e = {
            "bm25": 0.0 if rng.random() < 0.3 else rng.uniform(0.1, 15.0),
            "cos": rng.uniform(-0.1, 0.9),
            "fuzzy": 0.0 if rng.random() < 0.7 else rng.uniform(0.5, 1.0),
            "coverage": rng.random(),
            "name_words": rng.randint(0, 3),
            "opposed": int(rng.random() < 0.1),
            "reads_only": int(rng.random() < 0.3),
            "writes": int(rng.random() < 0.2),
            "contrary": int(rng.random() < 0.1),
            "does": int(rng.random() < 0.15),
            "negated": int(rng.random() < 0.1),
        }
        if rng.random() < 0.8:  # search.server_match' lead (absent: an index without server vectors)
            e["server"] = max(0.0, rng.uniform(-0.2, 0.6))
        out.append((f"s/t{i}", e))
    return out


def _fitted(fit: cal.ModelFit, q: dict, ev: list) -> dict[str, tuple[list[str], list[float]]]:
    """mode -> (tool ids, scores) as fit_fusion computes them with `fit`'s constants."""
    import numpy as np

    hybrid = fit_fusion.Calibration(np.array(fit.platt["hybrid"]), fit.listwise["hybrid"])
    semantic = fit_fusion.Calibration(np.array(fit.platt["semantic"]), fit.listwise["semantic"])
    keyword = fit_fusion.Calibration(np.array([cal.KW_LOG, cal.KW_REL, cal.KW_BIAS]), cal.KW_LISTWISE)
    h = fit_fusion.hybrid_item(q, ev, (fit.cos, fit.coverage, fit.name, fit.ramp, fit.server))
    s, k = fit_fusion.mode_item("semantic", q, ev), fit_fusion.mode_item("keyword", q, ev)
    return {
        "hybrid": (h[1], list(fit_fusion.marked_scores(h, hybrid, fit.action))),
        "semantic": (s[1], list(semantic.scores(s))),
        "keyword": (k[1], list(keyword.scores(k))),
    }


def test_the_fit_scores_candidates_as_search_does():
    """fit_fusion fits its constants on its own vectorised copy of calibration.score_candidates
    (z_values, Calibration, marked_scores, mode_item: numpy over every query of every set). The
    constants it writes are right only while that copy computes what search computes: random
    evidence, every shipped model's fit, every mode, queries of 1 to 20 words."""
    import copy
    import random

    import numpy as np

    rng = random.Random(3)
    checked = 0
    for model, fit in cal.FITS.items():
        for n_terms in (1, 3, 6, 9, 12, 20):
            for _ in range(8):
                ev = _evidence(rng, rng.randint(1, 60))
                q = {"n_terms": n_terms, "n_tools": rng.choice([300, 2375, 100_000]), "relevant": []}
                for mode, (ids, scores) in _fitted(fit, q, ev).items():
                    cands = {t: copy.deepcopy(e) for t, e in ev}
                    want = cal.score_candidates(cands, mode, q["n_tools"], model=model, n_terms=n_terms)
                    assert sorted(want) == sorted(ids), (model, mode)
                    assert np.allclose(scores, [want[t] for t in ids], rtol=1e-9, atol=1e-12), (model, mode, n_terms)
                    checked += len(ids)
    assert checked > 1000
