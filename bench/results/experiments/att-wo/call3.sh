# bench/results/experiments/att-wo/call3.sh - (not run: no device time left) call1.sh with the patch's last change,
# the fused launch in any form whose tiles are one wave of its blocks (call 2 ran it only in a pack form, which a bench
# of one-row shapes has only at 128 tokens), and the LayerNorm's 16-part instantiation without spills. Stage with
# att-wo/stage.sh (the library no longer has the option; it applies att-wo.patch around the build), call1.sh beside it.
DL=110 bash bench/results/experiments/att-wo/call1.sh
