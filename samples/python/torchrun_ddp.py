"""Data-parallel training with torch.compile(DDP(model)) under torchrun, gloo on the CPU (NCCL with --device cuda).

The trap: one rank's batches get longer than the others' (--long-rank R from step --long-at on: its
token_ids dim 1 goes from --length to --long-length). That rank's torch.compile recompiles for the new
length, alone, while every other rank waits for it at the next all-reduce of DDP's gradients.
The fix: --pad-to N pads every rank's batches to one length, so no rank recompiles alone.

Run it under tc, in either form (both write run.rank0.tcdb and run.rank1.tcdb):
  torchrun --nproc_per_node 2 --no-python tc-profile -o run.tcdb -- python torchrun_ddp.py
  tc-profile -o run.tcdb -- torchrun --nproc_per_node 2 torchrun_ddp.py
  tc-analyze run.rank*.tcdb
docs/frameworks.md ("Jobs") shows the report.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, CLASSES = 64, 4


class Classifier(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, dim, padding_idx=0)
        self.out = torch.nn.Linear(dim, CLASSES)

    def forward(self, token_ids):
        keep = (token_ids != 0).unsqueeze(-1).float()
        pooled = (self.embed(token_ids) * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.out(pooled)


def batch(rank, step, args):
    length = args.long_length if rank == args.long_rank and step >= args.long_at else args.length
    g = torch.Generator().manual_seed(rank * 1000 + step)
    token_ids = torch.randint(1, VOCAB, (args.batch_size, length), generator=g)
    if args.pad_to:  # the fix: one length on every rank (0 is the padding id)
        token_ids = torch.nn.functional.pad(token_ids, (0, args.pad_to - length))
    labels = token_ids[:, 0] % CLASSES
    return token_ids, labels


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--length", type=int, default=16)
    p.add_argument("--long-length", type=int, default=24)
    p.add_argument("--long-rank", type=int, default=1)
    p.add_argument("--long-at", type=int, default=4)
    p.add_argument("--pad-to", type=int, default=0, help="pad every batch to this length (the fix)")
    p.add_argument("--backend", default="inductor", help="torch.compile's backend (aot_eager compiles fastest)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cuda: each rank on GPU LOCAL_RANK, NCCL")
    args = p.parse_args()

    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = DDP(Classifier(args.dim).to(device))
    step_fn = torch.compile(model, backend=args.backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        token_ids, labels = (t.to(device) for t in batch(rank, step, args))
        loss = torch.nn.functional.cross_entropy(step_fn(token_ids), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print("loss %.4f after %d steps" % (loss.item(), args.steps))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
