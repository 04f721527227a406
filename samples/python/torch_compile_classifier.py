"""A small text classifier trained with torch.compile on Debian's fortunes.

The same corpus and categories as samples/text_classifier.cpp; it falls into
the traps tc diagnoses, each with the flag that fixes it:

  dynamic padding    every batch is padded to its own longest quote, so the
                     sequence length changes from batch to batch and
                     torch.compile recompiles (then marks the dim dynamic);
                     --pad-to 128 pads every batch to one length, or
                     --buckets 32,64,128 pads to the next bucket.
  short last batch   --examples not a multiple of --batch-size leaves a short
                     last batch (a new batch size); --drop-last drops it.
  .item() each step  the loss is read back inside the compiled step, which
                     breaks the graph there; --no-item reads it after the step.
  recompile limit    --dynamic false compiles one graph per shape until
                     --recompile-limit (torch's default 8) is hit; the step
                     then runs uncompiled.

Run it under tc:  tc-profile -o run.tcdb -- python torch_compile_classifier.py
"""
import argparse

import torch
import torch.nn.functional as F

import fortunes  # noqa: E402  (this folder)
from fortunes import VOCAB  # noqa: E402


class Classifier(torch.nn.Module):
    def __init__(self, classes, dim):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, dim, padding_idx=0)
        self.hidden = torch.nn.Linear(dim, dim)
        self.out = torch.nn.Linear(dim, classes)

    def forward(self, token_ids):
        keep = (token_ids != 0).unsqueeze(-1).float()
        x = torch.relu(self.hidden(self.embed(token_ids)))
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.out(pooled)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fortunes.add_arguments(p)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--no-item", action="store_true", help="read the loss after the step, not inside it")
    p.add_argument("--dynamic", default="auto", choices=["auto", "false"], help="torch.compile(dynamic=...)")
    p.add_argument("--recompile-limit", type=int, default=0, help="torch._dynamo.config.recompile_limit (0: torch's)")
    p.add_argument("--backend", default="inductor")
    a = p.parse_args()
    categories, seqs, labels = fortunes.load(a)

    if a.recompile_limit:
        torch._dynamo.config.recompile_limit = a.recompile_limit
    torch.manual_seed(a.seed)
    model = Classifier(len(categories), a.dim)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    @torch.compile(backend=a.backend, dynamic=None if a.dynamic == "auto" else False)
    def loss_of(token_ids, targets):
        loss = F.cross_entropy(model(token_ids), targets)
        if a.no_item:
            return loss, None
        return loss, loss.item()  # reads the value back inside the step: a graph break

    losses = []
    for rows, targets in fortunes.batches(a, seqs, labels, a.epochs):
        loss, value = loss_of(torch.tensor(rows, dtype=torch.long), torch.tensor(targets))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach() if value is None else value)
    fortunes.report(a, len(losses), len(seqs), float(losses[-1]) if losses else float("nan"))


if __name__ == "__main__":
    main()
