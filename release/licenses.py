#!/usr/bin/env python3
"""Writes the third-party licences of what offcode's binary for one target is
built from: every crate the binary links (normal dependencies, followed from
offcode for that platform; not dev- or build-only ones), with its licence
expression, and the licence texts its package ships (LICENSE*, LICENCE*,
COPYING*, NOTICE*, UNLICENSE), each distinct text once with the crates that
use it. Reads `cargo metadata` only: no network, no tool to install.

Usage: release/licenses.py TARGET > THIRD-PARTY-LICENSES.md
"""

import hashlib
import json
import os
import subprocess
import sys

NAMES = ("license", "licence", "copying", "notice", "unlicense")


def main():
    target = sys.argv[1]
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked",
             "--filter-platform", target],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    root = metadata["resolve"]["root"]
    linked, stack = set(), [root]
    while stack:
        for dep in nodes[stack.pop()]["deps"]:
            normal = any(k["kind"] is None for k in dep["dep_kinds"])
            if normal and dep["pkg"] not in linked:
                linked.add(dep["pkg"])
                stack.append(dep["pkg"])
    crates = sorted((packages[i] for i in linked), key=lambda p: (p["name"], p["version"]))
    texts = {}  # digest -> (text, [crate names])
    out = [
        "# Third-party licences\n",
        f"offcode for `{target}` is built from these {len(crates)} crates "
        "(name, version, licence). Their licence texts follow, each once, "
        "with the crates that ship it.\n",
    ]
    for crate in crates:
        spec = crate.get("license") or f"see {crate.get('license_file') or 'its package'}"
        out.append(f"- {crate['name']} {crate['version']}: {spec}")
        folder = os.path.dirname(crate["manifest_path"])
        files = sorted(
            f for f in os.listdir(folder)
            if f.lower().startswith(NAMES) and os.path.isfile(os.path.join(folder, f))
        )
        for name in files:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
            digest = hashlib.sha256(text.encode()).hexdigest()
            texts.setdefault(digest, (text, []))[1].append(f"{crate['name']} {crate['version']} ({name})")
    out.append("")
    for text, users in sorted(texts.values(), key=lambda t: t[1][0]):
        out.append("---\n")
        out.append("Shipped by: " + ", ".join(users) + "\n")
        out.append("```text\n" + text + "\n```\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
