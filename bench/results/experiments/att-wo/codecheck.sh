#!/usr/bin/env bash
# bench/results/experiments/att-wo/codecheck.sh - what att-wo.patch does to the machine code, on this machine (nvcc,
# no GPU): ptxas's registers and spills of layernorm_parts_kernel as call 2 ran it (9de3747) and as the patch has it
# now, and whether the patch leaves the .text of the existing attention and 8-part LayerNorm kernels byte for
# byte as HEAD's. Run from the repository root with nvcc on PATH; writes codecheck.txt beside this script.
set -euo pipefail
here=bench/results/experiments/att-wo
tmp=$(mktemp -d); trap 'git worktree remove --force "$tmp/patched" 2>/dev/null; rm -rf "$tmp"' EXIT
nv=(nvcc -O3 -std=c++17 -I. -lineinfo '-gencode=arch=compute_90a,code=sm_90a')
git worktree add -q --detach "$tmp/patched" HEAD
git -C "$tmp/patched" apply "$PWD/$here/att-wo.patch"
mkdir -p "$tmp/call2/kernels"
cp kernels/*.cuh kernels/cpu.h "$tmp/call2/kernels/"
for f in layernorm.cu cuda.h; do git show "9de3747:kernels/$f" > "$tmp/call2/kernels/$f"; done
regs() { (cd "$1" && "${nv[@]}" -Xptxas -v -c kernels/layernorm.cu -o /dev/null 2>&1) |
  grep -A3 "Compiling entry.*layernorm_parts_kernel" | grep -E "Compiling|spill|registers" |
  sed -E "s/.*entry function '([^']*)'.*/\1/; s/^ptxas info *: //"; }
for d in . "$tmp/patched"; do
  for f in attention layernorm; do (cd "$d" && "${nv[@]}" -cubin -o "$tmp/$(basename "$d")-$f.cubin" "kernels/$f.cu"); done
done
{
  echo "# $(nvcc --version | tail -1); sm_90a"
  echo "## layernorm_parts_kernel as call 2 ran it (9de3747)"; regs "$tmp/call2"
  echo "## layernorm_parts_kernel in att-wo.patch"; regs "$tmp/patched"
  echo "## .text of HEAD's kernels with the patch applied"
  python3 - "$tmp" <<'PY'
import os, struct, sys
def text(p):
    b = open(p, "rb").read()
    sh = struct.unpack_from("<Q", b, 0x28)[0]; es, n, si = struct.unpack_from("<HHH", b, 0x3A)
    hs = [struct.unpack_from("<IIQQQQIIQQ", b, sh + i * es) for i in range(n)]
    so = hs[si][4]
    name = lambda h: b[so + h[0]:b.index(b"\0", so + h[0])].decode()
    return {name(h): b[h[4]:h[4] + h[5]] for h in hs if name(h).startswith(".text.")}
t = sys.argv[1]
for f in ("attention", "layernorm"):
    a, p = text(f"{t}/.-{f}.cubin"), text(f"{t}/patched-{f}.cubin")
    same = 0
    for k in sorted(a):
        # the patch renames the parts kernel (a template argument more): match by bytes
        twin = [n for n, v in p.items() if v == a[k]]
        if k in twin and "parts" not in k and "attention" not in k:
            same += 1
            continue
        print(k[6:], "same as " + twin[0][6:] if twin else "DIFFERS")
    print(f"{f}.cu: {same} other kernels the same")
PY
} > "$here/codecheck.txt"
cat "$here/codecheck.txt"
