"""Fine-tune all-MiniLM-L6-v2 on (request, tool, near miss) triples: contrastive loss over the batch
(every other tool in the batch, and each example's near miss, is a negative), mean pooling and
normalisation exactly as toolidx embeds at search time.

    python training/train.py --out build/train/checkpoint [--steps N] [--batch 32] [--lr 3e-5]

Plain torch + transformers, no trainer framework: the loop is short, and the seeds, the data order
and the logged rate (pairs/second, minutes) are all in view. Logs one line per LOG_EVERY steps.

A run that cannot finish where it is (a shared CPU) stops on SIGUSR1 after the step under way,
leaving its whole state in OUT/resume/ (weights, optimiser, schedule, data order, random states);
`--resume` continues it from there to the same model as one run (the same threads and torch).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

BASE = HERE.parents[1] / "shared" / "models" / "all-MiniLM-L6-v2-fp32"
LOG_EVERY = 10


def mean_pool(hidden, mask):
    import torch

    m = mask.unsqueeze(-1).to(hidden.dtype)
    v = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(v, dim=-1)


def seed_everything(seed: int, threads: int) -> None:
    """Every random source a run reads, and torch's thread count (the sums, and so the bytes of
    the model, depend on it): the same seed and threads give the same model."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", default=str(BASE))
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    # measured on 2 cores: 4.5 pairs/s at 128 tokens a text, 11.8 at 64; a request is short, a tool's
    # name and first sentences carry most of what it does
    ap.add_argument("--query-len", type=int, default=64, help="tokens per request while training")
    ap.add_argument("--doc-len", type=int, default=96, help="tokens per tool text while training")
    ap.add_argument("--scale", type=float, default=20.0, help="cosine -> logit scale of the loss")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-sources", action="store_true", help="v1's data only (MetaTool, ETOM)")
    ap.add_argument("--indirect", action="store_true", help="staged sets: goal-style requests first (data.capped)")
    ap.add_argument("--resume", action="store_true", help="continue the run stopped by SIGUSR1 in OUT/resume/")
    args = ap.parse_args()

    stop: list[bool] = []  # installed first: a signal while the data loads stops at step 0, never kills
    signal.signal(signal.SIGUSR1, lambda *_: stop.append(True))
    import torch
    from data import training_examples
    from transformers import AutoModel, AutoTokenizer

    seed_everything(args.seed, args.threads)

    examples = training_examples(seed=args.seed, sources=not args.no_sources, indirect=args.indirect)
    tok = AutoTokenizer.from_pretrained(args.base)
    saved = Path(args.out) / "resume"
    model = AutoModel.from_pretrained(saved if args.resume else args.base)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / max(1, args.steps - warmup)))
    )

    def encode(texts: list[str], max_len: int):
        enc = tok(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        return mean_pool(model(**enc).last_hidden_state, enc["attention_mask"])

    order = list(range(len(examples)))
    rng = random.Random(args.seed)
    rng.shuffle(order)
    pos = 0
    t0 = time.time()
    seen = 0
    log = []
    first = 0
    if args.resume:
        state = torch.load(saved / "state.pt", weights_only=False)
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["torch_rng"])
        rng.setstate(state["rng"])
        order, pos, first, seen, log = state["order"], state["pos"], state["step"], state["seen"], state["log"]
        t0 -= state["seconds"]
    for step in range(first, args.steps):
        if stop:
            saved.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(saved)
            state = {"opt": opt.state_dict(), "sched": sched.state_dict(), "torch_rng": torch.get_rng_state()}
            state |= {"rng": rng.getstate(), "order": order, "pos": pos, "step": step, "seen": seen, "log": log}
            torch.save(state | {"seconds": time.time() - t0}, saved / "state.pt")
            print(f"stopped after step {step} of {args.steps}: --resume continues from {saved}", flush=True)
            return 3
        if pos + args.batch > len(order):
            rng.shuffle(order)
            pos = 0
        batch = [examples[i] for i in order[pos : pos + args.batch]]
        pos += args.batch
        texts = [e.positive for e in batch] + [e.negative for e in batch]
        q = encode([e.query for e in batch], args.query_len)
        d = encode(texts, args.doc_len)
        logits = args.scale * q @ d.T
        # the same tool text can stand twice in a batch (two requests for one tool), and a request
        # that needs two tools has its other one among the batch's texts: mask those, not negatives
        for i, e in enumerate(batch):
            for j, t in enumerate(texts):
                if j != i and (t == e.positive or t in e.also):
                    logits[i, j] = -1e4
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        seen += len(batch)
        if (step + 1) % LOG_EVERY == 0 or step + 1 == args.steps:
            el = time.time() - t0
            row = {
                "step": step + 1,
                "loss": round(loss.item(), 4),
                "pairs_per_s": round(seen / el, 1),
                "minutes": round(el / 60, 2),
                "lr": f"{sched.get_last_lr()[0]:.2e}",
            }
            log.append(row)
            print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    minutes = (time.time() - t0) / 60
    (out / "train_log.json").write_text(
        json.dumps(
            {
                "args": vars(args),
                "examples": len(examples),
                "epochs": round(args.steps * args.batch / len(examples), 2),
                "minutes": round(minutes, 1),
                "pairs_per_s": round(seen / (minutes * 60), 1),
                "log": log,
                "torch": torch.__version__,
            },
            indent=1,
        )
    )
    print(f"trained {args.steps} steps x {args.batch} in {minutes:.1f} min -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
