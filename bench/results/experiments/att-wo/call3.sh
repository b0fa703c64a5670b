# bench/results/experiments/att-wo/call3.sh - (not run: no device time left) call1.sh with the patch's last change,
# the fused launch in any form whose tiles are one wave of its blocks (call 2 ran it only in a pack form, which a bench
# of one-row shapes has only at 128 tokens), and the LayerNorm's 16-part instantiation without spills. Apply
# att-wo.patch before staging (the library no longer has the option); stage call1.sh beside it.
DL=110 bash bench/results/experiments/att-wo/call1.sh
