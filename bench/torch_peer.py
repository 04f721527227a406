"""PyTorch peer of tc-bench-compiler: the same models, shapes and optimizer
in torch (eager, or torch.compile with Inductor), timed the same way (first
step, then the median of --steps steps). Prints one RESULT line for the
harness.

Run by tc-bench-compiler with a Python that has torch (a benchmark peer
only; tc does not depend on Python). The Transformer layer is torch's own
nn.TransformerEncoderLayer (post-norm, ReLU, batch_first): torch's packed
QKV product and fused attention kernels are what tc is measured against.
"""
import argparse
import statistics
import time

import torch

MLP_BATCH, MLP_IN, MLP_HIDDEN, CLASSES = 128, 784, 512, 10
TF_BATCH, TF_DIM, TF_HEADS, TF_FF = 16, 128, 4, 512
LR = 0.01


class Transformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(TF_DIM, TF_HEADS, TF_FF, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(TF_DIM, CLASSES)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=["mlp", "transformer"], required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seq", type=int, default=64, help="Transformer sequence length")
    ap.add_argument("--compile", action="store_true", help="torch.compile the training step's model (Inductor)")
    a = ap.parse_args()
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(7)
    if a.model == "mlp":
        net = torch.nn.Sequential(torch.nn.Linear(MLP_IN, MLP_HIDDEN), torch.nn.ReLU(),
                                  torch.nn.Linear(MLP_HIDDEN, MLP_HIDDEN), torch.nn.ReLU(),
                                  torch.nn.Linear(MLP_HIDDEN, CLASSES))
        x = torch.randn(MLP_BATCH, MLP_IN, generator=g)
        y = torch.randint(0, CLASSES, (MLP_BATCH,), generator=g)
    else:
        net = Transformer()
        x = torch.randn(TF_BATCH, a.seq, TF_DIM, generator=g)
        y = torch.randint(0, CLASSES, (TF_BATCH,), generator=g)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    model = torch.compile(net) if a.compile else net

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    t0 = time.perf_counter()
    loss_first = step()
    first_ms = (time.perf_counter() - t0) * 1e3
    times = []
    loss = loss_first
    for _ in range(a.steps):
        t = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t) * 1e3)
    print(f"RESULT first_ms={first_ms:.3f} step_ms={statistics.median(times):.4f} "
          f"step_max_ms={max(times):.4f} step_mean_ms={statistics.mean(times):.4f} "
          f"loss_first={loss_first:.6f} loss_last={loss:.6f}")


if __name__ == "__main__":
    main()
