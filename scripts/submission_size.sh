#!/usr/bin/env bash
# How big the commits since BASE are, measured the two ways a submission is limited: the pack git would send
# (512 MiB at most) and the diffs of every commit added up (256 MiB at most). A binary file is counted as its old
# plus its new bytes in each commit that changes it, the most a text diff of it can be, so replacing a 20 MB
# model file in three commits costs ~120 MB: commit weights once per session.
#
#   bash scripts/submission_size.sh [BASE]     (default: origin/main, else the last commit older than 4 hours)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base=${1:-}
if [ -z "$base" ]; then
  base=$(git rev-parse -q --verify origin/main 2>/dev/null || git rev-list -1 --before='4 hours ago' HEAD)
fi
pack=$(git rev-list --objects "$base..HEAD" | git pack-objects --stdout -q | wc -c)
diffs=0
for commit in $(git rev-list "$base..HEAD"); do
  # Text: the patch's own length; binary: old + new blob sizes (numstat prints "-" for binary files).
  text=$(git diff --no-color "$commit^" "$commit" | wc -c)
  binary=$(git diff --numstat -z "$commit^" "$commit" | tr '\0' '\n' | awk -F'\t' '$1 == "-" {print $3}' |
    while read -r path; do
      for rev in "$commit^" "$commit"; do git cat-file -s "$rev:$path" 2>/dev/null || echo 0; done
    done | awk '{s += $1} END {print s + 0}')
  diffs=$((diffs + text + binary))
done
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "commits since $(git rev-parse --short "$base"): $(git rev-list --count "$base..HEAD")"
echo "pack: $(mib "$pack") (limit 512 MiB)"
echo "diffs: $(mib "$diffs") (limit 256 MiB)"
[ "$pack" -lt $((400 * 1048576)) ] && [ "$diffs" -lt $((200 * 1048576)) ] ||
  { echo "submission_size: over the safety margin (400 / 200 MiB): squash weight changes into one commit" >&2; exit 1; }
