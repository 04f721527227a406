"""PyTorch peer of tc-bench-compiler: the same models, shapes and optimizer
in torch (eager, or torch.compile with Inductor), timed the same way (first
step, then the median of --steps steps). Prints one RESULT line for the
harness.

Run by tc-bench-compiler with a Python that has torch (a benchmark peer
only; tc does not depend on Python). The Transformer layer is torch's own
nn.TransformerEncoderLayer (post-norm, ReLU, batch_first): torch's packed
QKV product and fused attention kernels are what tc is measured against.
"""
import torch

import peer_common

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
    ap = peer_common.arguments(__doc__)
    ap.add_argument("--compile", action="store_true", help="torch.compile the training step's model (Inductor)")
    ap.add_argument("--device", default="cpu", help="where the model and data live (scripts/gpu-check.sh: cuda)")
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
    net, x, y = net.to(a.device), x.to(a.device), y.to(a.device)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    model = torch.compile(net) if a.compile else net

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    peer_common.time_steps(step, a.steps)


if __name__ == "__main__":
    main()
