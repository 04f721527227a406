"""torch.compile with bucketed lengths that repeat: a script whose truth is known.

Each batch's token_ids is padded to a bucket, 32, 64 or 128, in a fixed order
with repeats (32: 4 steps, 64: 5, 128: 2; 11 steps), and the last batch is short
(4 rows instead of 8): bucket_truth.py. torch.compile's automatic dynamic makes
the length dynamic at its second size, so the steps after that compile nothing
and its log has no size for them: only tc's Python hook sees them. Prints the
truth as one JSON line. --backend eager (the default) keeps compiling cheap;
inductor is torch.compile's own default.

  tc-profile -o run.tcdb -- python torch_buckets.py
"""
import argparse

import torch

from bucket_truth import LENGTHS, print_truth, rows


class Classifier(torch.nn.Module):
    """The mean of the tokens' embeddings, then a linear layer: EmbeddingBag does both of the first."""

    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(100, 16, mode="mean")
        self.head = torch.nn.Linear(16, 4)

    def forward(self, token_ids):
        return self.head(self.bag(token_ids))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="eager")
    args = p.parse_args()
    torch.manual_seed(0)
    model = Classifier()
    compiled = torch.compile(model, backend=args.backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, n in enumerate(LENGTHS):
        token_ids = torch.randint(1, 100, (rows(i), n))
        targets = torch.randint(0, 4, (rows(i),))
        loss = torch.nn.functional.cross_entropy(compiled(token_ids), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print_truth(len(LENGTHS))


if __name__ == "__main__":
    main()
