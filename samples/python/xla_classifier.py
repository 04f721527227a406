"""A small text classifier trained with PyTorch/XLA on Debian's fortunes.

The same corpus, tokens and model as torch_compile_classifier.py (its data
loading is reused), on the XLA device: each step builds its batch on the
host, moves it to the device, runs forward, backward and AdamW lazily, and
cuts the graph with torch_xla.sync() (xm.mark_step() in older code). It falls into the traps tc diagnoses,
each with the flag that fixes it:

  dynamic padding    every batch is padded to its own longest quote, so the
                     graph's input shape changes from batch to batch and
                     PyTorch/XLA compiles a new graph; --pad-to 128 pads every
                     batch to one length, or --buckets 32,64,128 pads to the
                     next bucket.
  short last batch   --examples not a multiple of --batch-size leaves a short
                     last batch (a new batch size); --drop-last drops it.
  .item() each step  the loss is read back before the sync, which forces
                     an evaluation of the pending graph there (a graph of its
                     own to compile and run); --no-item keeps the losses on
                     the device and reads them after the loop.

Run it under tc:  PJRT_DEVICE=CPU tc-profile -o run.tcdb -- python xla_classifier.py
"""
import argparse
import os
import random
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_compile_classifier import FORTUNES, Classifier, read_fortunes, tokenize  # noqa: E402

import torch_xla  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=FORTUNES)
    p.add_argument("--categories", default="definitions,people,politics,zippy")
    p.add_argument("--examples", type=int, default=44, help="train on the first N shuffled quotes (0: all)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--pad-to", type=int, default=0, help="pad every batch to this length (the fix for dynamic padding)")
    p.add_argument("--buckets", default="", help="pad each batch to the next of these lengths, e.g. 32,64,128")
    p.add_argument("--drop-last", action="store_true", help="drop the short last batch")
    p.add_argument("--no-item", action="store_true", help="keep the losses on the device; read them after the loop")
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--print-shapes", action="store_true", help="print each step's batch size and padded length")
    a = p.parse_args()

    categories = [c for c in a.categories.split(",") if c]
    data = []
    for label, cat in enumerate(categories):
        path = os.path.join(a.data_dir, cat)
        try:
            data += [(q, label) for q in read_fortunes(path)]
        except OSError as e:
            sys.exit(f"cannot read {path} ({e.strerror}; install Debian's `fortunes` package, or pass --data-dir)")
    random.Random(a.seed).shuffle(data)
    if a.examples:
        data = data[: a.examples]
    seqs = [tokenize(q, a.max_length) for q, _ in data]
    labels = [l for _, l in data]
    buckets = sorted(int(b) for b in a.buckets.split(",") if b)

    def padded_length(longest):
        if a.pad_to:
            return a.pad_to
        for b in buckets:
            if longest <= b:
                return b
        return longest  # dynamic padding: the batch's longest quote

    device = torch_xla.device()
    torch.manual_seed(a.seed)
    model = Classifier(len(categories), a.dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    losses = []
    shapes = []
    for start in range(0, len(seqs), a.batch_size):
        rows = seqs[start : start + a.batch_size]
        if a.drop_last and len(rows) < a.batch_size:
            break
        length = padded_length(max(len(s) for s in rows))
        batch = torch.zeros(len(rows), length, dtype=torch.long)
        for i, s in enumerate(rows):
            batch[i, : len(s)] = torch.tensor(s[:length])
        shapes.append(f"{len(rows)}x{length}")
        token_ids = batch.to(device)
        targets = torch.tensor(labels[start : start + len(rows)]).to(device)
        loss = F.cross_entropy(model(token_ids), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.no_item:
            losses.append(loss.detach())
        else:
            losses.append(loss.item())  # read back before mark_step(): a forced evaluation
        torch_xla.sync()  # xm.mark_step(): the step's graph is cut, compiled (when new) and run
    last = float(losses[-1]) if losses else float("nan")
    if a.print_shapes:
        print("shapes:", " ".join(shapes))
    print(f"{len(losses)} steps, {len(seqs)} examples, batch {a.batch_size}, last loss {last:.4f}")


if __name__ == "__main__":
    main()
