"""Count the words of a text file and print the ten most common."""

import sys
from collections import Counter


def top_words(path: str, n: int = 10) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            counts.update(word.lower().strip(".,;:!?\"'") for word in line.split())
    counts.pop("", None)
    return counts.most_common(n)


if __name__ == "__main__":
    for word, count in top_words(sys.argv[1]):
        print(f"{count:>6}  {word}")
