# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# e03bef4's layad-dev (-base) and this commit's built with KN_EARLY_TRIGGER_TOKENS 0 (-notrig)
# why the own split GEMM slowed the small forward: with and without the early triggers, and
# Nsight Compute's duration of each gemm_parts launch inside the 1x83 forward
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base new notrig; do b=$BIN/layad-dev; [ $v != new ] && b=$BIN/layad-dev-$v
  echo "== $v"; timeout 40 $b bench --model $W/english --shapes 1x40,1x83 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in new notrig; do b=$BIN/layad-dev; [ $v != new ] && b=$BIN/layad-dev-$v
  timeout 80 $NCU --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size --kernel-name regex:gemm_parts --launch-skip 300 --launch-count 60 \
    --csv --page raw --print-units base $b bench --model $W/english --shapes 1x83 --groups 1 --per-group 2 --out $W/b.json > $OUT/ncu-parts-$v.csv 2>$W/ncu.err; echo "ncu $v exit $? $((SECONDS-t0)) s"
  python3 - $OUT/ncu-parts-$v.csv <<'PY'
import csv, sys, collections
rows=[r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h=rows[0]; ix={k:i for i,k in enumerate(h)}; g=collections.defaultdict(list)
for r in rows[2:]:
    g[r[ix['launch__grid_size']]].append((float(r[ix['gpu__time_duration.sum']].replace(',',''))/1e3, float(r[ix['dram__bytes_read.sum']].replace(',',''))/1e6))
for k,v in g.items(): print('grid', k, 'n', len(v), 'us mean', round(sum(a for a,_ in v)/len(v),2), 'MB mean', round(sum(b for _,b in v)/len(v),2))
PY
done
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
