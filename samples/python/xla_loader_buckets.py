"""PyTorch/XLA with MpDeviceLoader and bucketed lengths with repeats: a script whose truth is known.

Each batch's token_ids are padded to a bucket, 32, 64 or 128, in a fixed order
with repeats (32: 4 steps, 64: 5, 128: 2; 11 steps), and the last batch is short
(4 rows instead of 8). torch_xla's MpDeviceLoader moves each batch to the
device (no .to() in the loop) and cuts the graph at each batch, as SageMaker
and Hugging Face scripts run it. Prints the truth as one JSON line.

  PJRT_DEVICE=CPU tc-profile -o run.tcdb -- python xla_loader_buckets.py
"""
import json

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.distributed.parallel_loader as pl

LENGTHS = [32, 64, 128, 32, 64, 64, 32, 128, 64, 64, 32]
BATCH, SHORT = 8, 4


class Batches(torch.utils.data.IterableDataset):
    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        for i, n in enumerate(LENGTHS):
            rows = SHORT if i == len(LENGTHS) - 1 else BATCH
            yield torch.randint(1, 100, (rows, n), generator=g), torch.randint(0, 4, (rows,), generator=g)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, token_ids):
        return self.out(self.embed(token_ids).mean(dim=1))


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = pl.MpDeviceLoader(torch.utils.data.DataLoader(Batches(), batch_size=None), device)
    steps = 0
    for token_ids, targets in loader:
        loss = F.cross_entropy(model(token_ids), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    per_size = {}
    for n in LENGTHS:
        per_size[n] = per_size.get(n, 0) + 1
    padded = len(LENGTHS) * max(LENGTHS)
    print(json.dumps({"steps": steps, "token_ids dim 1 steps per size": per_size, "largest": max(LENGTHS),
                      "padding share at the largest": round(1 - sum(LENGTHS) / padded, 4),
                      "short last batch": [SHORT, BATCH]}))


if __name__ == "__main__":
    main()
