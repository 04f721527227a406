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
import os
import random
import sys

import torch
import torch.nn.functional as F

from fortunes import FORTUNES, VOCAB, read_fortunes, tokenize  # noqa: E402  (this folder)


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
    p.add_argument("--data-dir", default=FORTUNES)
    p.add_argument("--categories", default="definitions,people,politics,zippy")
    p.add_argument("--examples", type=int, default=0, help="train on the first N shuffled quotes (0: all)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--pad-to", type=int, default=0, help="pad every batch to this length (the fix for dynamic padding)")
    p.add_argument("--buckets", default="", help="pad each batch to the next of these lengths, e.g. 32,64,128")
    p.add_argument("--drop-last", action="store_true", help="drop the short last batch")
    p.add_argument("--no-item", action="store_true", help="read the loss after the step, not inside it")
    p.add_argument("--dynamic", default="auto", choices=["auto", "false"], help="torch.compile(dynamic=...)")
    p.add_argument("--recompile-limit", type=int, default=0, help="torch._dynamo.config.recompile_limit (0: torch's)")
    p.add_argument("--backend", default="inductor")
    p.add_argument("--dim", type=int, default=32)
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
    shapes = []
    step = 0
    for epoch in range(a.epochs):
        for start in range(0, len(seqs), a.batch_size):
            rows = seqs[start : start + a.batch_size]
            if a.drop_last and len(rows) < a.batch_size:
                break
            length = padded_length(max(len(s) for s in rows))
            token_ids = torch.zeros(len(rows), length, dtype=torch.long)
            for i, s in enumerate(rows):
                token_ids[i, : len(s)] = torch.tensor(s[:length])
            targets = torch.tensor(labels[start : start + len(rows)])
            shapes.append(f"{len(rows)}x{length}")
            loss, value = loss_of(token_ids, targets)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.detach() if value is None else value)
            step += 1
    last = float(losses[-1]) if losses else float("nan")
    if a.print_shapes:
        print("shapes:", " ".join(shapes))
    print(f"{step} steps, {len(seqs)} examples, batch {a.batch_size}, last loss {last:.4f}")


if __name__ == "__main__":
    main()
