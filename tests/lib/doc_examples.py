#!/usr/bin/env python3
"""doc_examples.py - run the examples of the Markdown docs and compare their real output.

Usage: doc_examples.py [--update] BASE_URL LAYAD_BIN TINY_DIR FILE.md...

An example is a fenced ```sh block whose commands all start with `curl` or `layad` (continuation
lines of a quoted argument or after a backslash included), `layad serve` aside: a daemon does not
exit, and the one the test starts stands in for it. It runs as one bash script in a temporary directory, after
three substitutions that make the copy-paste form run here: http://127.0.0.1:8080 -> BASE_URL (a
daemon on the tiny checkpoint, what `make run` serves), `layad ` at the start of a command ->
LAYAD_BIN, build/tiny -> TINY_DIR. It must exit 0. When a ```json or ```text block follows it
(blank lines between at most), that block is the output the reader is promised:

  json  the output parses to the same JSON: same keys in the same order, numbers compared as
        written (0.5 is not 0.50), so a block may be wrapped for reading; a string "..." in the
        block stands for any value (a path, an uptime).
  text  the output, byte for byte (trailing newlines aside).

Other ```sh blocks (make, systemctl) are listed as not run, with the reason. --update rewrites each
compared block with the real output (one line for JSON, as the daemon sends it): run it after a
deliberate change of answers, then read the diff. Exits 1 when an example fails or differs.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)\s*$")
RUNNABLE = re.compile(r"^(curl|layad)\s")
DAEMON = re.compile(r"^layad\s+serve\b")  # runs until stopped: the test's daemon stands in for it


def blocks(lines):
    """(info, first body line index, end fence index) of each fenced block."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((m.group(1), i + 1, j))
        i = j + 1
    return out


def commands(body):
    """Each command's line (lines inside an open single quote or after a backslash continue it)."""
    firsts, open_quote, cont = [], False, False
    for line in body:
        if not open_quote and not cont and line.strip() and not line.lstrip().startswith("#"):
            firsts.append(line.lstrip())
        if line.count("'") % 2:
            open_quote = not open_quote
        cont = line.rstrip().endswith("\\")
    return firsts


def ordered(text):
    return json.loads(text, object_pairs_hook=lambda kv: ("{}", kv), parse_float=lambda s: ("num", s),
                      parse_int=lambda s: ("num", s))


def same(want, got):
    if want == "...":
        return True
    if isinstance(want, tuple) and want[0] == "{}":
        if not (isinstance(got, tuple) and got[0] == "{}"):
            return False
        return [k for k, _ in want[1]] == [k for k, _ in got[1]] and all(
            same(a, b) for (_, a), (_, b) in zip(want[1], got[1]))
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(same(a, b) for a, b in zip(want, got))
    return want == got


def run(script, base, binary, tiny, workdir):
    script = script.replace("http://127.0.0.1:8080", base).replace("build/tiny", tiny)
    script = re.sub(r"(?m)^layad ", binary + " ", script)
    p = subprocess.run(["bash", "-c", "set -eo pipefail\n" + script], cwd=workdir, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check_file(path, base, binary, tiny, update):
    lines = open(path).read().split("\n")
    bl = blocks(lines)
    failures, ran, rewrites = 0, 0, []
    for n, (info, start, end) in enumerate(bl):
        if info != "sh":
            continue
        body = lines[start:end]
        cmds = commands(body)
        where = "%s:%d" % (path, start)
        if not cmds or not all(RUNNABLE.match(c) for c in cmds) or any(DAEMON.match(c) for c in cmds):
            why = sorted({" ".join(c.split()[:2]) if DAEMON.match(c) else c.split()[0] for c in cmds if c.split()})
            print("--   %s not run: %s" % (where, ", ".join(why)))
            continue
        ran += 1
        with tempfile.TemporaryDirectory() as wd:
            rc, out, err = run("\n".join(body), base, binary, tiny, wd)
        if rc:
            print("FAIL %s exited %d: %s" % (where, rc, err.strip()[-500:]))
            failures += 1
            continue
        nxt = bl[n + 1] if n + 1 < len(bl) else None
        between = lines[end + 1:nxt[1] - 1] if nxt else ["x"]
        if not nxt or nxt[0] not in ("json", "text") or any(l.strip() for l in between):
            print("ok   %s (exit 0, no output promised)" % where)
            continue
        want = "\n".join(lines[nxt[1]:nxt[2]])
        if nxt[0] == "json":
            try:
                ok = same(ordered(want), ordered(out))
            except ValueError as e:
                print("FAIL %s: not JSON (%s): %s" % (where, e, out[:300]))
                failures += 1
                continue
        else:
            ok = want.rstrip("\n") == out.rstrip("\n")
        if ok:
            print("ok   %s (%s output matches)" % (where, nxt[0]))
        elif update:
            rewrites.append((nxt[1], nxt[2], out.rstrip("\n").split("\n")))
            print("upd  %s" % where)
        else:
            print("FAIL %s: the documented output differs from the real one\n  documented: %s\n  real:       %s"
                  % (where, " ".join(want.split())[:2000], out.strip()[:2000]))
            failures += 1
    for start, end, new in reversed(rewrites):
        lines[start:end] = new
    if rewrites:
        open(path, "w").write("\n".join(lines))
    return failures, ran


def main():
    args = sys.argv[1:]
    update = args and args[0] == "--update"
    if update:
        args = args[1:]
    base, binary, tiny, files = args[0], os.path.abspath(args[1]), os.path.abspath(args[2]), args[3:]
    failures = total = 0
    for f in files:
        fl, ran = check_file(f, base, binary, tiny, update)
        failures += fl
        total += ran
    print("%d examples run, %d failed" % (total, failures))
    return 1 if failures or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
