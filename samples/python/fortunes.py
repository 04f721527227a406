"""The fortunes corpus of the Python samples: quotes from Debian's fortunes
package, split at "%" lines, and words as stable hashed ids (no framework
imported here, so every sample can share it).
"""
import re

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
