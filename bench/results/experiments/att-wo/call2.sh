# bench/results/experiments/att-wo/call2.sh - call1.sh again after its fix at 3214b62 (the per-head parts outgrew
# a->o in a bench of few buckets, so the option never ran; blocks of 128 columns for the tiny geometry). Staged with
# call1.sh beside it.
bash bench/results/experiments/att-wo/call1.sh
