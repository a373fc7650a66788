"""The model card shipped beside the model (MODEL_CARD.md), written from model.json and
evaluate.py's report, so its numbers are the build's own."""

from __future__ import annotations

from pathlib import Path

SOURCES = """\
| data | used for | license |
|---|---|---|
| MetaTool (HowieHwong/MetaTool, `all_clean_data.csv`, `plugin_des.json`): LLM-written requests for ~200 ChatGPT plugins | training: 80 % of the plugins (split by a hash of the name), at most 40 requests each; validation: the other 20 % | MIT |
| ETOM (levels 1-2 requests, `tools.jsonl`) | training: requests whose tools all sit on half of ETOM's 491 servers (split by a hash of the server name), plus each training tool's name as a request; validation: the other half | MIT (declared in ETOM's README) |
| ToolRet apibank, gorilla-huggingface (as re-published in MFTR) | validation only (no license found: never trained on) | none found |
| LiveMCPBench, livemcp-natural (527 tools of 70 servers) | test only: never trained on, no setting chosen on them | Apache-2.0 (LiveMCPBench) |
| all-MiniLM-L6-v2 (sentence-transformers) | the base model | Apache-2.0 |
"""

# the staged sets (../shared/train/SOURCE.md): what each is, and its license
STAGED = {
    "clinc150": ("CLINC150 (clinc/oos-eval): crowd-written requests, 118 intents as tools", "CC BY 3.0"),
    "hwu64": ("HWU64 (xliuhw/NLU-Evaluation-Data): crowd-written home-assistant requests, 55 intents", "CC BY 4.0"),
    "banking77": ("Banking77 (PolyAI-LDN): crowd-written customer-support requests, 77 intents", "CC BY 4.0"),
    "api-bank": ("API-Bank (AlibabaResearch/DAMO-ConvAI): first user turns of single-API dialogues", "Apache-2.0"),
    "tooltalk": ("ToolTalk (microsoft/ToolTalk): user turns -> the APIs the next turn calls", "MIT"),
    "toolalpaca": ("ToolAlpaca (tangqiaoyu/ToolAlpaca): eval instructions over 21 public APIs", "Apache-2.0"),
    "restbench": ("RestBench (Yifan-Song793/RestGPT): TMDB requests -> endpoints (Spotify half dropped)", "MIT"),
    "seal-tools": (
        "Seal-Tools (fairyshine/Seal-Tools): LLM-written tools and instructions (dev, test splits)",
        "Apache-2.0",
    ),
    "nestful": ("NESTFUL (IBM/NESTFUL): nested call sequences, RapidAPI and Glaive parts", "Apache-2.0"),
    "apibench": ("Gorilla APIBench (ShishirPatil/gorilla): instructions -> ML model APIs", "Apache-2.0"),
}


def sources_table(counts: dict[str, int]) -> str:
    """The staged sets the model trained on: requests used (after the caps), split and license."""
    rows = [
        "| staged set (../shared/train) | requests trained on | validation | license |",
        "|---|---:|---|---|",
    ]
    for name, n in counts.items():
        what, lic = STAGED[name]
        split = (
            "20 % of its requests (hash of the id)"
            if name in ("restbench", "nestful")
            else "20 % of its tools (hash of the id)"
        )
        rows.append(f"| {what} | {n} | {split} | {lic} |")
    rows.append(
        "| StableToolBench (ToolBench test queries) | not used: ToolBench says its data is \"intended solely "
        "for research and educational purposes\" | — | Apache-2.0 with that caveat |"
    )
    return "\n".join(rows)


def _table(rows: dict) -> str:
    names = list(next(iter(rows.values())))  # MiniLM, v1 where measured (--ref), this one
    label = {"MiniLM": "MiniLM", "ref": "v1", "tuned": "this"}
    cols = [f"{label.get(n, n)} {m}" for m in ("R@1", "R@5", "MRR@10") for n in names]
    out = ["| set | queries | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for name, r in rows.items():
        cells = [f"{r[n][m]:.3f}" for m in ("R@1", "R@5", "MRR@10") for n in names]
        out.append(f"| {name} | {r[names[0]]['queries']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _broad(report: dict) -> str:
    """evaluate.py's `broad` line: the mean over the validation sets a choice is made on."""
    if "broad" not in report:
        return ""
    label = {"MiniLM": "MiniLM", "ref": "v1", "tuned": "this"}
    cells = ", ".join(f"{label.get(n, n)} {b['R@1']:.3f} / {b['R@5']:.3f}" for n, b in report["broad"].items())
    n = next(iter(report["broad"].values()))["sets"]
    return f"\nMean R@1 / R@5 over the {n} validation sets of 25 requests or more (ToolRet's two left out): {cells}.\n"


def _staged(tr: dict) -> str:
    if not tr.get("sources"):
        return ""
    return (
        "\n" + sources_table(tr["sources"]) + "\n\nEach set's tools are split 80 / 20 by a hash of the id; at most 20 "
        "requests per tool and 1,000 per set are trained on (the intent sets hold 9-17k); requests needing more "
        "than 3 tools are skipped, and a request needing 2-3 is one example whose positive is one of its tools "
        "(seeded), its other tools masked from its negatives. Its near miss is another tool of the same server "
        "(of the same set where the set has no servers). Training requests whose normalised text stands in any "
        "validation or test set are dropped, and `training/decontam.py` re-checks that before every build.\n"
    )


def write_card(folder: Path, card: dict, report: dict) -> None:
    tr = card["training"]
    ov = report["overlap"]
    text = f"""# {card['name']} (version {card['version']})

toolidx's default embedding model: {card['base']}, fine-tuned to match requests with the
descriptions of the tools that serve them. 384 dimensions, mean pooling, normalised; ONNX with
int8 weights (per output channel), loaded by fastembed as all-MiniLM-L6-v2's layout. Rebuilt by
`python training/build.py` (training/README.md). `model.onnx` sha256 `{card['sha256']}`.

## Training

Contrastive loss over the batch (every other tool of the batch and each example's near miss are
negatives; the near miss is a sibling tool of the same server where there is one), scale 20,
{tr['steps']} steps of {tr['batch']} examples ({tr['examples']} examples, {tr['epochs']} epochs), AdamW lr
{tr['lr']} with 10 % warm-up and linear decay, requests cut at {tr['query_len']} tokens and tool texts at
{tr['doc_len']} while training, seed {tr['seed']}; 15 % of the examples repeated with one or two typing slips.
{tr['minutes']} minutes on 2 CPU cores ({tr['pairs_per_s']} examples/s, torch {tr['torch']}).

{SOURCES}
{_staged(tr)}
The ETOM queries trained on are listed in model.json (`trained_on`); the benchmarks leave them
out whenever they measure this model, and compare MiniLM on the same queries.

## Plain cosine retrieval, beside all-MiniLM-L6-v2 (int8 both, as toolidx loads them)

Validation (held out from training; where a setting is to be chosen. This run chose none: it is
v1's recipe and compute, on v1's examples plus the staged sets where the card lists them):

{_table(report['validation'])}
{_broad(report)}
Test (never trained on, nothing chosen on them):

{_table(report['test'])}

Of the test catalog's {ov['test tools']} tools, {ov['same text']} have the same text as a training tool and
{ov['same name in ETOM training half']} share a name with a tool of ETOM's training half.
Hybrid search (the default mode) with this model's own fitted constants, on every bench set and
style: docs/research/search.md ("toolidx's model").

## Limits

English only, like its base. Trained for one short run on a CPU: a longer run, or more licensed
data, may do better. Search's fusion weights, score calibration and "no good match" gate are fitted
for this model by name (toolidx/search/calibration.json); a retrained model needs a new name or a refit.
"""
    (folder / "MODEL_CARD.md").write_text(text)
