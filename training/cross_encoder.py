"""A cross-encoder for issue #22 item 5 (a): all-MiniLM-L6-v2 with a one-logit head reading
"request [SEP] tool text", trained on data.py's triples as pairs: the tool (1), its near miss (0)
and one random other tool (0), binary cross-entropy on the logit. A measurement, not shipped:
benchmarks/cross_encoder.py scores hybrid's top 10 with it.

    python training/cross_encoder.py --out build/ce [--until 12:55] [--triples 10]

The run sizes itself: after WARM steps it measures its pace and sets the step count (and the
learning rate's decay) to end by --until (UTC). Saves the model every SAVE_EVERY steps, so a run
stopped early still leaves a checkpoint.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

LOG_EVERY, SAVE_EVERY, WARM = 25, 150, 20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--until", default="12:55", help="UTC time the run should end by")
    ap.add_argument("--triples", type=int, default=10, help="triples a step (3 pairs each)")
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch
    from data import training_examples
    from train import BASE, seed_everything
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    seed_everything(args.seed, args.threads)

    examples = training_examples(seed=args.seed)
    tools = sorted({e.positive for e in examples})
    tok = AutoTokenizer.from_pretrained(BASE)
    model = AutoModelForSequenceClassification.from_pretrained(BASE, num_labels=1)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    plan = {"steps": 10**9}  # set once the pace is known

    def lr_factor(s: int) -> float:
        return min((s + 1) / WARM, max(0.05, (plan["steps"] - s) / max(1, plan["steps"] - WARM)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    hh, mm = map(int, args.until.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    end = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save(step: int) -> None:
        model.save_pretrained(out / "checkpoint")
        tok.save_pretrained(out / "checkpoint")
        (out / "checkpoint" / "train_log.json").write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "examples": len(examples),
                    "step": step,
                    "planned_steps": plan["steps"],
                    "epochs": round(step * args.triples / len(examples), 3),
                    "log": log,
                    "torch": torch.__version__,
                },
                indent=1,
            )
        )

    rng = random.Random(args.seed)
    order = list(range(len(examples)))
    rng.shuffle(order)
    pos, seen, log, step, recent = 0, 0, [], 0, []
    loss_fn = torch.nn.BCEWithLogitsLoss()
    t0 = time.time()
    while step < plan["steps"]:
        if pos + args.triples > len(order):
            rng.shuffle(order)
            pos = 0
        batch = [examples[i] for i in order[pos : pos + args.triples]]
        pos += args.triples
        qs, ds, ys = [], [], []
        for e in batch:
            while (other := rng.choice(tools)) in (e.positive, e.negative):
                pass
            for d, y in ((e.positive, 1.0), (e.negative, 0.0), (other, 0.0)):
                qs.append(e.query)
                ds.append(d)
                ys.append(y)
        enc = tok(qs, ds, padding=True, truncation="longest_first", max_length=args.max_len, return_tensors="pt")
        loss = loss_fn(model(**enc).logits.squeeze(-1), torch.tensor(ys))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        seen += len(ys)
        recent = [*recent[-(LOG_EVERY - 1) :], loss.item()]
        step += 1
        el = time.time() - t0
        if step == WARM:
            plan["steps"] = WARM + int((end - time.time()) * step / el * 0.97)
            print(json.dumps({"warm_pairs_per_s": round(seen / el, 1), "planned_steps": plan["steps"]}), flush=True)
        if step % LOG_EVERY == 0 or step == plan["steps"]:
            row = {
                "step": step,
                "loss": round(sum(recent) / len(recent), 4),
                "pairs_per_s": round(seen / el, 1),
                "minutes": round(el / 60, 2),
                "lr": f"{sched.get_last_lr()[0]:.2e}",
            }
            log.append(row)
            print(json.dumps(row), flush=True)
        if step % SAVE_EVERY == 0:
            save(step)
    save(step)
    print(f"trained {step} steps x {3 * args.triples} pairs in {(time.time() - t0) / 60:.1f} min -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
