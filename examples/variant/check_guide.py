#!/usr/bin/env python3
"""The guide quotes the example, so the quotes must stay true: every ```cuda block of GUIDE must
appear verbatim in SOURCE. Usage: check_guide.py GUIDE SOURCE (exit 1 naming a stale block)."""
import re
import sys


def main(guide_path: str, source_path: str) -> int:
    with open(guide_path, encoding="utf-8") as f:
        guide = f.read()
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    blocks = re.findall(r"^```cuda\n(.*?)^```$", guide, flags=re.DOTALL | re.MULTILINE)
    if not blocks:
        print(f"{guide_path}: no ```cuda block found; the guide should quote {source_path}")
        return 1
    stale = [b for b in blocks if b not in source]
    for block in stale:
        first = block.strip().splitlines()[0]
        print(f"{guide_path}: a quoted block is not in {source_path} (it starts: {first!r}); quote the file as it is")
    print(f"{len(blocks) - len(stale)} of {len(blocks)} quoted blocks found in {source_path}")
    return 1 if stale else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: check_guide.py GUIDE SOURCE")
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
