"""The fortunes corpus of the Python samples: quotes from Debian's fortunes
package, split at "%" lines, and words as stable hashed ids (no framework
imported here, so every sample can share it).
"""
import os
import random
import re
import sys

FORTUNES = "/usr/share/games/fortunes"
VOCAB = 4096  # word ids by hash; 0 is padding


def read_fortunes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        quotes, cur = [], []
        for line in f:
            if line.strip() == "%":
                if cur:
                    quotes.append(" ".join(cur))
                cur = []
            else:
                cur.append(line.strip())
        if cur:
            quotes.append(" ".join(cur))
    return quotes


def tokenize(text, max_length):
    words = re.findall(r"[a-z0-9']+", text.lower())[:max_length]
    # A stable hash (Python's hash() of str is salted per process).
    return [1 + (sum((i + 1) * ord(c) for i, c in enumerate(w)) % (VOCAB - 1)) for w in words] or [1]


def add_arguments(p, examples=0, batch_size=16, dim=32):
    """The data, padding and model-size flags every sample shares."""
    p.add_argument("--data-dir", default=FORTUNES)
    p.add_argument("--categories", default="definitions,people,politics,zippy")
    p.add_argument("--examples", type=int, default=examples, help="train on the first N shuffled quotes (0: all)")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--pad-to", type=int, default=0, help="pad every batch to this length (the fix for dynamic padding)")
    p.add_argument("--buckets", default="", help="pad each batch to the next of these lengths, e.g. 32,64,128")
    p.add_argument("--drop-last", action="store_true", help="drop the short last batch")
    p.add_argument("--dim", type=int, default=dim)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--print-shapes", action="store_true", help="print each step's batch size and padded length")


def load(a):
    """(categories, token id lists, labels) of the shuffled corpus the flags name."""
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
    return categories, [tokenize(q, a.max_length) for q, _ in data], [l for _, l in data]


def batches(a, seqs, labels, epochs=1):
    """Yields (token id rows padded with 0 to the batch's length, labels), and
    appends "BxT" to a.shapes: padded to --pad-to, to the next of --buckets,
    or else to the batch's longest quote (dynamic padding, the trap)."""
    buckets = sorted(int(b) for b in a.buckets.split(",") if b)
    a.shapes = []
    for _ in range(epochs):
        for start in range(0, len(seqs), a.batch_size):
            rows = seqs[start : start + a.batch_size]
            if a.drop_last and len(rows) < a.batch_size:
                break
            longest = max(len(s) for s in rows)
            length = a.pad_to or next((b for b in buckets if longest <= b), longest)
            a.shapes.append(f"{len(rows)}x{length}")
            yield [s[:length] + [0] * (length - len(s[:length])) for s in rows], labels[start : start + len(rows)]


def report(a, steps, examples, last):
    if a.print_shapes:
        print("shapes:", " ".join(a.shapes))
    print(f"{steps} steps, {examples} examples, batch {a.batch_size}, last loss {last:.4f}")
