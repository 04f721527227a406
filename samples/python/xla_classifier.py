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
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fortunes  # noqa: E402
from torch_compile_classifier import Classifier  # noqa: E402

import torch_xla  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fortunes.add_arguments(p, examples=44, batch_size=8, dim=16)
    p.add_argument("--no-item", action="store_true", help="keep the losses on the device; read them after the loop")
    a = p.parse_args()
    categories, seqs, labels = fortunes.load(a)

    device = torch_xla.device()
    torch.manual_seed(a.seed)
    model = Classifier(len(categories), a.dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    losses = []
    for rows, targets in fortunes.batches(a, seqs, labels):
        token_ids = torch.tensor(rows, dtype=torch.long).to(device)
        targets = torch.tensor(targets).to(device)
        loss = F.cross_entropy(model(token_ids), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.no_item:
            losses.append(loss.detach())
        else:
            losses.append(loss.item())  # read back before mark_step(): a forced evaluation
        torch_xla.sync()  # xm.mark_step(): the step's graph is cut, compiled (when new) and run
    fortunes.report(a, len(losses), len(seqs), float(losses[-1]) if losses else float("nan"))


if __name__ == "__main__":
    main()
