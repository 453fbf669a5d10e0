#!/usr/bin/env python3
"""Runs every fenced shell command of the README, as written, and checks what it answers.

Each ```sh block's commands (a line ending in a backslash continues on the next) run one after the other,
in order, with `bash -c`, in one fresh temp folder that links the repository's `families/`, `tests/` and
`tools/`: the README's commands name shipped files by their paths from the repository root, and whatever
they write lands in the temp folder. Nothing in a command is changed. `kiln` is the program under test
(--kiln), first on PATH.

A command passes when it exits 0 and, where its trailing comment says `prints "TEXT"`, its output (stdout
and stderr) contains TEXT; `prints "TEXT" first`: the first ranked line (`1.`, the best class) holds it.
A command that draws kiln's warning about an old option name or a bare-number duration fails: the README
writes every option by its current name.

Markers, HTML comments on the line before a block (invisible in the rendered README):
  <!-- readme-test: skip-block: REASON -->      no command of the block runs (each is listed as skipped
                                                with the reason): CI's own set-up, scripts for the GPU
                                                machine, data that is not shipped
  <!-- readme-test: gpu -->                     the block needs an NVIDIA GPU and a kiln built with CUDA;
                                                without them each command is listed as skipped, saying so
  <!-- readme-test: skip "TEXT": REASON -->     the block's commands containing TEXT are skipped, with the
                                                reason (several such lines may precede a block)
  <!-- readme-test: long "TEXT": REASON -->     the block's commands containing TEXT take minutes (the demo
                                                studies): they run where KILN_README_LONG=1 is set, and are
                                                listed as skipped, with the reason, elsewhere
Every skip is printed; none is silent.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
PRINTS = re.compile(r'prints "([^"]+)"( first)?')
OLD_NAME = re.compile(r"^kiln: warning: .*(is an old name of|is deprecated)", re.MULTILINE)
RANKED_FIRST = re.compile(r"^\s*1\.\s")  # kiln run's best class: "  1.  89.73%  Ankle boot (9)"


class Block:
    def __init__(self, line):
        self.line = line  # the README line of the opening fence
        self.commands = []  # (README line, command text)
        self.skip_block = None
        self.gpu = False
        self.skip = []  # (text, reason)
        self.long = []  # (text, reason)


def parse(readme):
    blocks, markers, block, pending = [], [], None, None
    for number, raw in enumerate(open(readme, encoding="utf-8").read().splitlines(), 1):
        line = raw.rstrip()
        if block is None:
            marker = MARKER.match(line)
            if marker:
                markers.append((number, marker.group(1)))
                continue
            if line.startswith("```"):
                if line[3:].strip() in ("sh", "bash", "shell", "console"):
                    block = Block(number)
                    for at, text in markers:
                        apply_marker(block, at, text)
                else:
                    block = Block(number)
                    block.skip_block = "not a shell block"
                markers = []
                continue
            if line.strip():
                for at, _ in markers:
                    sys.exit(f"README.md:{at}: a readme-test marker must stand right before a ``` block")
            continue
        if line.startswith("```"):
            if block.skip_block != "not a shell block":
                blocks.append(block)
            block = None
            continue
        if block.skip_block == "not a shell block":
            continue
        if pending is not None:
            pending = (pending[0], pending[1] + "\n" + line)
        elif line.strip() and not line.lstrip().startswith("#"):
            pending = (number, line)
        else:
            continue
        if not pending[1].endswith("\\"):
            block.commands.append(pending)
            pending = None
    if block is not None:
        sys.exit(f"README.md:{block.line}: a ``` block is not closed")
    for block in blocks:
        for text, _ in block.skip + block.long:
            if not any(text in command for _, command in block.commands):
                sys.exit(f"README.md:{block.line}: the marker's \"{text}\" names no command of the block")
    return blocks


def apply_marker(block, at, text):
    if text.startswith("skip-block:"):
        block.skip_block = text[len("skip-block:"):].strip()
    elif text == "gpu":
        block.gpu = True
    elif re.match(r'(skip|long) "[^"]+":', text):
        match = re.match(r'(skip|long) "([^"]+)":\s*(.*)', text)
        (block.skip if match.group(1) == "skip" else block.long).append((match.group(2), match.group(3)))
    else:
        sys.exit(f"README.md:{at}: unknown readme-test marker '{text}'")


def gpu_reason(cuda_built):
    """Why the GPU blocks cannot run here, or None where they can."""
    if not cuda_built:
        return "needs a GPU: this kiln is built without the CUDA backend"
    if shutil.which("nvidia-smi") is None:
        return "needs a GPU: none here (no nvidia-smi)"
    if subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        return "needs a GPU: none here (nvidia-smi -L fails)"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--cuda-built", choices=("ON", "OFF"), default="OFF",
                        help="whether kiln was built with the CUDA backend (CMake's KILN_CUDA)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    readme = os.path.abspath(args.readme)
    root = os.path.dirname(readme)
    blocks = parse(readme)
    if not any(block.commands for block in blocks):
        sys.exit("README.md has no fenced shell command")

    work = tempfile.mkdtemp(prefix="kiln-readme-")
    for name in ("families", "tests", "tools"):
        os.symlink(os.path.join(root, name), os.path.join(work, name))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(args.kiln)) + os.pathsep + env.get("PATH", "")
    no_gpu = gpu_reason(args.cuda_built == "ON") if any(block.gpu for block in blocks) else None

    try:
        failures = run_blocks(blocks, work, env, no_gpu)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("failed: " + ", ".join(failures))
        return 1
    return 0


def run_blocks(blocks, work, env, no_gpu):
    """Runs every command in order; returns the README places of those that failed."""
    ran = skipped = 0
    failures = []
    start = time.monotonic()
    for block in blocks:
        for number, command in block.commands:
            where = f"README.md:{number}"
            shown = command.replace("\\\n", "\\\n    ")
            reason = block.skip_block or (no_gpu if block.gpu else None)
            reason = reason or next((why for text, why in block.skip if text in command), None)
            if not reason and os.environ.get("KILN_README_LONG") != "1":
                reason = next((why + "; KILN_README_LONG=1 runs it" for text, why in block.long if text in command),
                              None)
            if reason:
                print(f"SKIP {where}: {shown}\n     ({reason})", flush=True)
                skipped += 1
                continue
            began = time.monotonic()
            result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                                    text=True, errors="replace")
            seconds = time.monotonic() - began
            output = result.stdout + result.stderr
            problems = []
            if result.returncode != 0:
                problems.append(f"exit status {result.returncode}")
            comment = command.split("#", 1)[1] if "#" in command else ""
            for expected, first in PRINTS.findall(comment):
                if first:
                    best = next((line for line in output.splitlines() if RANKED_FIRST.match(line)), "")
                    if expected not in best:
                        problems.append(f'the best class is not "{expected}" (first ranked line: "{best.strip()}")')
                elif expected not in output:
                    problems.append(f'the output lacks "{expected}"')
            old = OLD_NAME.search(output)
            if old:
                problems.append(f'an old option name: "{old.group(0)}"')
            ran += 1
            state = "FAIL" if problems else "ok  "
            print(f"{state} {where} ({seconds:.1f} s): {shown}", flush=True)
            if problems:
                print("     " + "; ".join(problems) + "\n     output:\n" +
                      "\n".join("       " + line for line in output.splitlines()[-30:]), flush=True)
                failures.append(where)
    print(f"\n{ran} commands ran, {len(failures)} failed, {skipped} skipped, "
          f"{time.monotonic() - start:.0f} s (in {work})")
    return failures


if __name__ == "__main__":
    sys.exit(main())
