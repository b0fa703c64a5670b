#!/usr/bin/env python3
"""bodies.py SET DIR NAME=MODEL NAME=MODEL - the request bodies of the two-model runs: SET's bodies (one JSON body a
line, bench/mixed/gen_requests.py) with "model" set, into DIR/NAME.jsonl for each NAME=MODEL, and the two sets
interleaved body by body (first, second, first, ...) into DIR/pair.jsonl."""
import json
import sys


def write(path, rows):
    with open(path, "w") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(set_path, out_dir, *names):
    bodies = [json.loads(line) for line in open(set_path)]
    sets = []
    for arg in names:
        name, model = arg.split("=", 1)
        sets.append([dict(b, model=model) for b in bodies])
        write("%s/%s.jsonl" % (out_dir, name), sets[-1])
    write("%s/pair.jsonl" % out_dir, [r for pair in zip(*sets) for r in pair])


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n")[0])
    main(*sys.argv[1:])
