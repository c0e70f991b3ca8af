"""Character error rate: Levenshtein distance (substitutions, insertions, deletions) over reference characters."""


def edit_distance(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def character_error_rate(hypotheses, references):
    """Corpus CER in percent: total edits / total reference characters."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    chars = sum(len(r) for r in references)
    if chars == 0:
        raise ValueError("the references have no characters")
    return 100.0 * sum(edit_distance(h, r) for h, r in zip(hypotheses, references)) / chars
