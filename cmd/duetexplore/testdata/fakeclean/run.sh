#!/bin/sh
# A program that behaves as a clean exploring run does, in 0.3 s: a
# heartbeat, one action, its report, the end line, exit 0.
printf '{"beat":0}\n' > "$DUET_EXPLORE_TRACE"
printf '{"n":0,"action":{"verb":"click","address":"window '"'"'w'"'"' > GtkButton#0","at":1000000}}\n' >> "$DUET_EXPLORE_TRACE"
cat > "$DUET_EXPLORE_OUT" <<'J'
{"action":{"verb":"click","address":"window 'w' > GtkButton#0","at":1000000}}
{"summary":{"seed":1,"actions":1,"findings":0}}
J
sleep 0.15
printf '{"end":"done"}\n' >> "$DUET_EXPLORE_TRACE"
sleep 0.15
exit 0
