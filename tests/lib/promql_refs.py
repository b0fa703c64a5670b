#!/usr/bin/env python3
"""promql_refs.py - do the queries of the shipped dashboard and alert rules select series that
layad exports?

    promql_refs.py --metrics FILE [--metrics FILE ...] [--pending NAME ...] DASHBOARD.json RULES.yml ...

Reads the PromQL of a Grafana dashboard (every "expr", and label_values() in the templating) and
of Prometheus rule files (every "expr"), finds each series selector (metric name and label
matchers), and checks it against the exposition files given with --metrics (a live /metrics, and
whatever else stands in for series this host cannot show, such as the GPU families): the metric
name must be exported; every matcher's label must be on that metric (job and instance are the
target labels Prometheus adds); an equality matcher's value must occur. `up` is Prometheus' own.
A name given with --pending may be missing (a call site not wired yet): it is reported, not failed.
Prints one line per problem and exits 1 if there is any; prints a summary and exits 0 otherwise.

A small lexer, not a PromQL parser: it knows function calls, aggregations with by/without, vector
matching (on/ignoring/group_*), ranges and subqueries in [], strings, numbers, durations and
Grafana variables ($x, ${x}, $__rate_interval), which is all the shipped queries use.
"""
import json
import re
import sys

import yaml

TARGET_LABELS = {"job", "instance"}
PROMETHEUS_SERIES = {"up"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "start", "end"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}

TOKEN = re.compile(r'''
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[A-Za-z]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@])
''', re.X)


def lex(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot read {expr[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


def unquote(s):
    return json.loads(s) if s[0] == '"' else s[1:-1]


def skip_group(toks, i, open_, close):
    """toks[i] is open_: the index after its matching close."""
    depth = 0
    while i < len(toks):
        if toks[i][1] == open_:
            depth += 1
        elif toks[i][1] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_}")


def selectors(expr):
    """[(metric, [(label, op, value), ...]), ...] of every series selector in expr."""
    toks, out, i = lex(expr), [], 0
    while i < len(toks):
        kind, val = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if val == "[":
            i = skip_group(toks, i, "[", "]")
        elif kind == "ident" and val in LABEL_LISTS:
            i = skip_group(toks, i + 1, "(", ")") if nxt == "(" else i + 1
        elif kind == "ident" and (val in KEYWORDS or val in AGGREGATIONS or nxt == "("):
            i += 1
        elif kind == "ident":
            matchers, i = [], i + 1
            if nxt == "{":
                end = skip_group(toks, i, "{", "}")
                body = toks[i + 1:end - 1]
                for j in range(0, len(body), 4):
                    lab, op, v = body[j:j + 3]
                    if lab[0] != "ident" or op[0] != "op" or v[0] != "str":
                        raise ValueError(f"cannot read the matchers of {val}")
                    matchers.append((lab[1], op[1], unquote(v[1])))
                i = end
            out.append((val, matchers))
        elif val == "{":
            raise ValueError("a selector without a metric name")
        else:
            i += 1
    return out


def load_exposition(path, series):
    """series: metric name -> {label: set(values)} over the sample lines of path."""
    sample = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+\S+')
    pair = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:\\.|[^"\\])*)"')
    with open(path) as f:
        for line in f:
            m = sample.match(line)
            if not m or line.startswith("#"):
                continue
            labels = series.setdefault(m.group(1), {})
            for k, v in pair.findall(m.group(2) or ""):
                labels.setdefault(k, set()).add(v)


def exprs_of_dashboard(path):
    out = []

    def walk(x, where):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "expr" and isinstance(v, str):
                    out.append((where, v))
                else:
                    walk(v, x.get("title", where) if isinstance(x.get("title"), str) else where)
        elif isinstance(x, list):
            for v in x:
                walk(v, where)

    with open(path) as f:
        dash = json.load(f)
    walk(dash.get("panels", []), "panel")
    for var in dash.get("templating", {}).get("list", []):
        q = var.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if var.get("type") == "query" and isinstance(q, str):
            m = re.fullmatch(r'\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*', q)
            if not m:
                raise ValueError(f"variable {var.get('name')}: only label_values(selector, label) is understood")
            out.append((f"variable {var['name']}", m.group(1)))
            out.append((f"variable {var['name']}", f'{m.group(1)}{{{m.group(2)}=~".+"}}'))
    return out


def exprs_of_rules(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [(r.get("alert") or r.get("record"), r["expr"]) for g in doc["groups"] for r in g["rules"]]


def main(argv):
    metrics, pending, files = [], set(), []
    it = iter(argv)
    for a in it:
        if a == "--metrics":
            metrics.append(next(it))
        elif a == "--pending":
            pending.add(next(it))
        else:
            files.append(a)
    series = {}
    for m in metrics:
        load_exposition(m, series)
    exprs = []
    for f in files:
        exprs += [(f"{f}: {w}", e) for w, e in (exprs_of_dashboard(f) if f.endswith(".json") else exprs_of_rules(f))]
    problems, names = [], set()
    for where, e in exprs:
        try:
            sels = selectors(e)
        except ValueError as err:
            problems.append(f"{where}: {err}: {e}")
            continue
        for name, matchers in sels:
            names.add(name)
            if name in PROMETHEUS_SERIES:
                continue
            if name not in series:
                if name in pending:
                    print(f"PENDING {name} (absent; allowed by --pending) in {where}")
                else:
                    problems.append(f"{where}: {name} is not exported")
                continue
            for lab, op, v in matchers:
                if lab in TARGET_LABELS:
                    continue
                if lab not in series[name]:
                    problems.append(f"{where}: {name} has no label {lab}")
                elif op == "=" and v not in series[name][lab]:
                    problems.append(f'{where}: {name} has no series with {lab}="{v}"')
    for p in problems:
        print(p)
    print(f"{len(exprs)} expressions, {len(names)} metric names, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
