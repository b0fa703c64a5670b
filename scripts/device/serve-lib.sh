# scripts/device/serve-lib.sh - sourced by a call script after run-env.sh: serve_start PORT [ARG...] starts
# `layad serve` on the English checkpoint (fp16, CUDA, request logs off, its log in $W/serve.log, the ARGs after
# those) and waits for /readyz;
# serve_stop sends SIGTERM and waits, printing the exit status.
serve_start() {
  serve_port=$1; shift
  "$B/layad" serve --model "$W/english" --device cuda --dtype fp16 --port "$serve_port" --log-requests false \
    --log-file "$W/serve.log" "$@" & serve_pid=$!
  for _ in $(seq 300); do curl -fsS "http://127.0.0.1:$serve_port/readyz" > /dev/null 2>&1 && return 0; sleep 0.2; done
  echo "layad serve not ready after 60 s" >&2; return 1
}
serve_stop() {
  kill -TERM "$serve_pid"; wait "$serve_pid"; echo "serve exit $?"
}
