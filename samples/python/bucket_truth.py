"""The truth of the bucket samples (jax_buckets.py, torch_buckets.py).

Each batch's token_ids is padded to a bucket, 32, 64 or 128, in a fixed order
with repeats (32: 4 steps, 64: 5, 128: 2; 11 steps), and the last batch is short
(4 rows instead of 8). print_truth() prints it as one JSON line, the samples'
last (the fixtures' truth.json).
"""
import json

LENGTHS = [32, 64, 128, 32, 64, 64, 32, 128, 64, 64, 32]
BATCH, SHORT = 8, 4


def rows(step):
    """The rows of step `step`'s batch."""
    return SHORT if step == len(LENGTHS) - 1 else BATCH


def print_truth(steps):
    per_size = {}
    for n in LENGTHS:
        per_size[n] = per_size.get(n, 0) + 1
    print(json.dumps({"steps": steps, "token_ids dim 1 steps per size": per_size, "largest": max(LENGTHS),
                      "padding share at the largest": round(1 - sum(LENGTHS) / (len(LENGTHS) * max(LENGTHS)), 4),
                      "short last batch": [SHORT, BATCH]}))
